import sys
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError, CommandParser
from tqdm import tqdm

from mailbox.archive import ArchiveError, count_messages
from mailbox.services.importer import import_archive
from mailfathom.errors import MailFathomError


class Command(BaseCommand):
    help = "Import an mbox file, a Maildir or a folder of .eml files into a mapped folder."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--account", required=True, help="The account identifier.")
        parser.add_argument("--folder", required=True, help="The alias of a folder the account maps.")
        parser.add_argument("path", type=Path)
        parser.add_argument("--no-progress", action="store_true", help="Do not draw a progress bar.")

    def handle(self, *args: object, **options: object) -> None:
        path: Path = options["path"]  # type: ignore[assignment]
        try:
            total = count_messages(path)
        except ArchiveError as error:
            raise CommandError(str(error)) from error
        # tqdm redraws one line in place; Django's OutputWrapper would add a newline per update.
        bar = tqdm(total=total, unit="msg", disable=bool(options["no_progress"]), file=sys.stderr)
        try:
            result = import_archive(
                str(options["account"]), str(options["folder"]), path, progress=bar.update
            )
        except (MailFathomError, ArchiveError) as error:
            raise CommandError(str(error)) from error
        finally:
            bar.close()
        self.stdout.write(
            f"Read {result.read} messages: {result.stored} stored, {result.skipped} already held, "
            f"{result.withheld} over the size limit (envelope only), "
            f"{result.awaiting_headroom} awaiting storage headroom (envelope only), "
            f"{result.filled} filled in, {result.defective} with parse defects, "
            f"{result.suppressed} erased on request before (not stored again)."
        )

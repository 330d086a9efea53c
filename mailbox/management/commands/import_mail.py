from pathlib import Path

from django.core.management.base import BaseCommand, CommandError, CommandParser

from mailbox.archive import ArchiveError
from mailbox.services.importer import import_archive
from mailfathom.errors import MailFathomError
from mailfathom.progress import INTERRUPTED, TerminalProgress


class Command(BaseCommand):
    help = (
        "Import an mbox file, a Maildir, .eml files, or a folder holding any number of them "
        "(read in path order), into one mapped folder, with a progress bar. Importing again "
        "stores nothing twice; Ctrl-C stops it keeping every committed batch."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--account", required=True, help="The account identifier.")
        parser.add_argument("--folder", required=True, help="The alias of a folder the account maps.")
        parser.add_argument("path", type=Path)
        parser.add_argument("--no-progress", action="store_true", help="Do not draw a progress bar.")

    def handle(self, *args: object, **options: object) -> None:
        path: Path = options["path"]  # type: ignore[assignment]
        if not path.exists():
            raise CommandError("The path is neither a file nor a folder.")
        # tqdm redraws one line in place; Django's OutputWrapper would add a newline per update.
        bars = TerminalProgress(self.stderr._out, disable=bool(options["no_progress"]))
        try:
            with bars:
                result = import_archive(str(options["account"]), str(options["folder"]), path, progress=bars)
        except (MailFathomError, ArchiveError) as error:
            raise CommandError(str(error)) from error
        except KeyboardInterrupt:
            raise CommandError(INTERRUPTED, returncode=130) from None
        self.stdout.write(
            f"Read {result.read} messages: {result.stored} stored, {result.skipped} already held, "
            f"{result.withheld} over the size limit (envelope only), "
            f"{result.awaiting_headroom} awaiting storage headroom (envelope only), "
            f"{result.filled} filled in, {result.defective} with parse defects, "
            f"{result.suppressed} erased on request before (not stored again)."
        )

from collections import Counter
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from mailbox.archive import ArchiveError
from mailbox.services.importer import import_archive
from mailfathom.core.errors import MailFathomError
from mailfathom.core.progress import INTERRUPTED, TerminalProgress


class Command(BaseCommand):
    help = (
        "Import an mbox file, a Maildir, message files (RFC 822 under any name, Outlook .msg), "
        "or a folder holding any number of them (read in path order, each file judged by its "
        "content), into one mapped folder, with a progress bar. Files that hold no mail are "
        "counted by kind. Importing again stores nothing twice; Ctrl-C stops it keeping every "
        "committed batch."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--account", required=True, help="The account identifier.")
        parser.add_argument("--folder", required=True, help="The alias of a folder the account maps.")
        parser.add_argument("path", type=Path)
        parser.add_argument("--no-progress", action="store_true", help="Do not draw a progress bar.")

    def handle(self, *args: object, **options: Any) -> None:
        path: Path = options["path"]
        if not path.exists():
            raise CommandError("The path is neither a file nor a folder.")
        # tqdm redraws one line in place; Django's OutputWrapper would add a newline per update.
        bars = TerminalProgress(self.stderr._out, disable=bool(options["no_progress"]))  # type: ignore[arg-type]  # the TextIO OutputWrapper wraps; the stubs see _out as Callable
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
        if result.report.read:
            self.stdout.write(f"Files read: {_counts(result.report.read, READ_KINDS)}.")
        passed = sum(result.report.passed_over.values())
        if passed:
            files = "file" if passed == 1 else "files"
            self.stdout.write(f"{passed} {files} passed over: {_counts(result.report.passed_over)}.")
        else:
            self.stdout.write("No file passed over.")


# How the kinds read are named in the summary (mailbox.archive_kinds).
READ_KINDS = {
    "maildir-message": "Maildir messages",
    "mbox": "mbox",
    "eml": ".eml",
    "message": "RFC 822 under other names",
    "outlook": "Outlook .msg",
}


def _counts(counts: Counter[str], names: dict[str, str] | None = None) -> str:
    """`3 PDF, 1 unreadable`: most first, then by name; kinds are labels, never file names."""
    ordered = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    return ", ".join(f"{n} {(names or {}).get(kind, kind)}" for kind, n in ordered if n)

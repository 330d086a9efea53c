from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from mailbox.management.command_slots import held_or_refused
from mailbox.services.attachment_text import SLOT_BUSY, extract_pending, extraction_slot
from mailfathom.core.progress import INTERRUPTED, Progress, TerminalProgress


class Command(BaseCommand):
    help = (
        "Extract the text of attachments of mail stored before (or not yet reached by the worker's "
        "pass), newest first, with a progress bar. Ctrl-C stops it keeping every email done; run it "
        "again, or let the worker's schedule, take up the rest."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--max-emails", type=int, default=None, help="Stop after this many emails.")
        parser.add_argument("--no-progress", action="store_true", help="Do not draw a progress bar.")

    def handle(self, *args: object, **options: Any) -> None:
        bars = TerminalProgress(self.stderr._out, disable=bool(options["no_progress"]))  # type: ignore[arg-type]  # the TextIO OutputWrapper wraps; the stubs see _out as Callable
        try:
            with held_or_refused(extraction_slot(), SLOT_BUSY) as renew:

                def report(event: Progress) -> None:
                    renew()  # a long pass keeps its slot
                    bars(event)

                with bars:
                    result = extract_pending(max_emails=options["max_emails"], progress=report)
        except KeyboardInterrupt:
            raise CommandError(INTERRUPTED, returncode=130) from None
        if result.inactive:
            raise CommandError(
                "No attachment kind is switched on (MAILFATHOM_ATTACHMENT_TEXT_KINDS is empty)."
            )
        if not result.emails:
            self.stdout.write("Nothing to extract: every email's attachments have been read.")
            return
        outcomes = ", ".join(f"{count} {outcome}" for outcome, count in sorted(result.outcomes.items()))
        self.stdout.write(f"Read {result.attachments} attachments of {result.emails} emails ({outcomes}).")

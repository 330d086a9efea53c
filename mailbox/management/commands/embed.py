from collections.abc import Callable
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from mailbox.management.command_slots import held_or_refused
from mailbox.services.embedding import SWEEP_BATCH, SweepResult, embed_pending
from mailbox.services.reembedding import SWEEP_BUSY, sweep_slot
from mailfathom.core.progress import INTERRUPTED, Progress, TerminalProgress


class Command(BaseCommand):
    help = (
        "Embed the mail that has no passage under the active embedding profile, newest first, "
        "with a progress bar (rate and remaining time). Ctrl-C stops it keeping every committed "
        "batch; run it again, or let the worker's schedule, take up the rest."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--max-batches", type=int, default=None, help="Stop after this many batches (default: all)."
        )
        parser.add_argument(
            "--batch-size",
            type=int,
            default=SWEEP_BATCH,
            help=f"Emails per provider call and commit (default {SWEEP_BATCH}; a provider may take fewer).",
        )
        parser.add_argument("--no-progress", action="store_true", help="Do not draw a progress bar.")

    def handle(self, *args: object, **options: Any) -> None:
        # The worker's sweep, reembed and this command share one slot, so they never embed the
        # same rows.
        with held_or_refused(sweep_slot(), SWEEP_BUSY) as renew:
            result = self._sweep(renew, options)
        if result.inactive:
            raise CommandError("No embedding provider is configured (MAILFATHOM_EMBEDDING_PROVIDER is none).")
        if result.batches == 0 and not result.stopped_by:
            self.stdout.write("Nothing to embed: every available email has its passage.")
            return
        stopped = {
            "ceiling": "; stopped at the hourly character ceiling",
            "provider": "; stopped: the provider failed",
            "profile": "; stopped: the configured model is not the active profile's (run manage.py reembed)",
        }
        self.stdout.write(
            f"Embedded {result.embedded} emails in {result.batches} batches, "
            f"{result.skipped_empty} with no text{stopped.get(result.stopped_by, '')}."
        )

    def _sweep(self, renew: Callable[[], bool], options: dict[str, Any]) -> SweepResult:
        bars = TerminalProgress(self.stderr._out, disable=bool(options["no_progress"]))  # type: ignore[arg-type]  # the TextIO OutputWrapper wraps; the stubs see _out as Callable

        def report(event: Progress) -> None:
            renew()  # a long sweep keeps its slot
            bars(event)

        try:
            with bars:
                return embed_pending(
                    max_batches=options["max_batches"],
                    batch_size=int(options["batch_size"]),
                    progress=report,
                )
        except KeyboardInterrupt:
            raise CommandError(INTERRUPTED, returncode=130) from None

import redis
from django.core.management.base import BaseCommand, CommandError, CommandParser

from mailbox import tasks
from mailbox.services.embedding import SWEEP_BATCH, embed_pending
from mailfathom.keyvalue import redis_client
from mailfathom.progress import INTERRUPTED, Progress, TerminalProgress


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

    def handle(self, *args: object, **options: object) -> None:
        # The worker's sweep and this one take the same lock, so they never embed the same rows.
        client = redis_client()
        try:
            held = client.set(tasks.SWEEP_KEY, "command", nx=True, ex=tasks.SWEEP_LOCK_SECONDS)
        except redis.RedisError as error:
            raise CommandError(
                f"Redis cannot be reached ({type(error).__name__}); check REDIS_URL."
            ) from None
        if not held:
            raise CommandError("A sweep is running in a worker; try again when it has finished its slice.")
        bars = TerminalProgress(self.stderr._out, disable=bool(options["no_progress"]))

        def report(event: Progress) -> None:
            client.expire(tasks.SWEEP_KEY, tasks.SWEEP_LOCK_SECONDS)  # a long sweep keeps its lock
            bars(event)

        try:
            with bars:
                result = embed_pending(
                    max_batches=options["max_batches"],  # type: ignore[arg-type]
                    batch_size=int(options["batch_size"]),  # type: ignore[call-overload]
                    progress=report,
                )
        except KeyboardInterrupt:
            raise CommandError(INTERRUPTED, returncode=130) from None
        finally:
            client.delete(tasks.SWEEP_KEY)
        if result.inactive:
            raise CommandError("No embedding provider is configured (MAILFATHOM_EMBEDDING_PROVIDER is none).")
        if result.batches == 0 and not result.stopped_by:
            self.stdout.write("Nothing to embed: every available email has its passage.")
            return
        stopped = {
            "ceiling": "; stopped at the hourly character ceiling",
            "provider": "; stopped: the provider failed",
        }
        self.stdout.write(
            f"Embedded {result.embedded} emails in {result.batches} batches, "
            f"{result.skipped_empty} with no text{stopped.get(result.stopped_by, '')}."
        )

import os
from typing import Any

import redis
from django.core.management.base import BaseCommand, CommandError, CommandParser

from mailbox.management.command_slots import redis_unreachable
from mailbox.services.reembedding import SWEEP_BUSY, discard_inactive_passages, reembed
from mailfathom.core.progress import INTERRUPTED, TerminalProgress
from mailfathom.providers import ProviderError


class Command(BaseCommand):
    help = (
        "Embed every email the configured embedding model has no vector for, in the foreground with "
        "progress; after a change of MAILFATHOM_EMBEDDING_MODEL this switches the active profile first."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--all",
            action="store_true",
            help="Embed every email again, even those with a vector (after a change of the window).",
        )
        parser.add_argument(
            "--processes",
            type=int,
            default=os.cpu_count() or 1,
            help="Processes embedding at once, each on its own shard of the mail (default: one per core).",
        )
        parser.add_argument(
            "--discard-old",
            action="store_true",
            help="Afterwards delete the vectors of every profile but the active one.",
        )
        parser.add_argument("--no-progress", action="store_true", help="Do not draw a progress bar.")

    def handle(self, *args: object, **options: Any) -> None:
        processes = int(options["processes"])
        if not 1 <= processes <= 64:
            raise CommandError("--processes must be between 1 and 64.")
        bars = TerminalProgress(self.stderr._out, disable=bool(options["no_progress"]))  # type: ignore[arg-type]  # the TextIO OutputWrapper wraps; the stubs see _out as Callable
        try:
            with bars:
                result = reembed(everything=bool(options["all"]), processes=processes, progress=bars)
        except ValueError as error:
            raise CommandError(str(error)) from error
        except ProviderError as error:
            raise CommandError(f"Embedding stopped: {error.message}") from None
        except KeyboardInterrupt:
            raise CommandError(INTERRUPTED, returncode=130) from None
        except redis.RedisError as error:
            raise redis_unreachable(error) from None
        if result.busy:
            raise CommandError(SWEEP_BUSY)
        if result.switched_from:
            self.stdout.write(
                f"Switched the active embedding profile from {result.switched_from} to {result.profile}."
            )
        stopped = f" Stopped early: {result.sweep.stopped_by}." if result.sweep.stopped_by else ""
        self.stdout.write(
            f"Embedded {result.sweep.embedded} emails under {result.profile} "
            f"({result.sweep.skipped_empty} had no text); {result.pending_after} still pending.{stopped}"
        )
        if options["discard_old"]:
            self.stdout.write(f"Deleted {discard_inactive_passages()} vectors of inactive profiles.")

"""Re-embedding the mailbox: switching the embedding profile and working off the backlog.

Vectors of two models live in different spaces, so a change of model, provider or dimension
means embedding again. `switch_profile` activates the configured profile; mail without a
passage under it becomes pending, and the old profile's passages stay until
`discard_inactive_passages`, so switching back costs only new mail. `reembed` (behind
`manage.py reembed`) runs the sweep in the foreground over forked processes, holding the
periodic task's sweep slot so the schedule does not embed the same mail alongside it.
"""

from __future__ import annotations

import logging
import multiprocessing
import queue as queue_module
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any

from django.db import connection, connections, transaction
from django.db.models import Exists, OuterRef

from mailbox.models import Email, EmbeddingProfile, Passage
from mailbox.services.embedding import (
    SWEEP_LABEL,
    Shard,
    SweepResult,
    _ensure_vector_index,
    active_profile,
    embed_pending,
    pending_count,
)
from mailbox.services.slots import exclusive_slot
from mailfathom.core.progress import Progress, ProgressCallback
from mailfathom.providers import get_embedder
from mailfathom.providers.base import Embedder

logger = logging.getLogger(__name__)

SWEEP_KEY = "mailfathom:embedding-sweep"
SWEEP_LOCK_SECONDS = 30 * 60
SWEEP_BUSY = (
    "Another embedding sweep is running (a worker's, embed or reembed); try again when it has finished."
)


def sweep_slot() -> AbstractContextManager[Callable[[], bool] | None]:
    """Hold the one sweep slot (see mailbox.services.slots), or yield None when another sweep has it.

    The renewing function it yields must be called at least every SWEEP_LOCK_SECONDS.
    """
    return exclusive_slot(SWEEP_KEY, SWEEP_LOCK_SECONDS)


def switch_profile(embedder: Embedder) -> EmbeddingProfile:
    """Make `embedder`'s profile the active one; mail without a passage under it becomes pending."""
    spec = embedder.profile
    with transaction.atomic():
        profile, _ = EmbeddingProfile.objects.get_or_create(
            provider=spec.provider, model=spec.model, dimensions=spec.dimensions
        )
        EmbeddingProfile.objects.filter(active=True).exclude(pk=profile.pk).update(active=False)
        if not profile.active:
            profile.active = True
            profile.save(update_fields=["active"])
        held = Passage.objects.filter(email=OuterRef("pk"), profile=profile, position=0)
        Email.objects.update(embedded=Exists(held))
    _ensure_vector_index(profile)
    return profile


def restart_embedding() -> int:
    """Discard the active profile's passages so every email is embedded again; returns how
    many emails are pending."""
    profile = active_profile()
    with transaction.atomic():
        if profile is not None:
            Passage.objects.filter(profile=profile).delete()
        Email.objects.filter(embedded=True).update(embedded=False)
    return pending_count()


def discard_inactive_passages() -> int:
    """Delete the passages and vector indexes of every profile but the active one."""
    deleted = 0
    for pk in EmbeddingProfile.objects.filter(active=False).values_list("pk", flat=True):
        with transaction.atomic():
            deleted += Passage.objects.filter(profile_id=pk).delete()[0]
            with connection.cursor() as cursor:
                cursor.execute(f"DROP INDEX IF EXISTS passage_hnsw_{int(pk)}")
    return deleted


@dataclass
class ReembedResult:
    """What one `reembed` did; `switched_from` names the profile it left, if it switched."""

    profile: str
    switched_from: str
    pending_before: int
    sweep: SweepResult
    pending_after: int
    busy: bool = False  # another sweep held the slot: nothing was done


def reembed(
    *,
    everything: bool = False,
    processes: int = 1,
    progress: ProgressCallback | None = None,
) -> ReembedResult:
    """Bring every email's vector into the configured embedder's profile (module docstring).

    `progress` hears how many of the emails to embed (counted once the switch is made) are
    settled after each committed batch, whichever process committed it.
    """
    embedder = get_embedder()
    if embedder is None:
        raise ValueError("no embedding provider is configured")
    with sweep_slot() as renew:
        if renew is None:
            return ReembedResult("", "", 0, SweepResult(), pending_count(), busy=True)
        before = active_profile()
        spec = embedder.profile
        switched_from = ""
        if before is None or (before.provider, before.model, before.dimensions) != (
            spec.provider,
            spec.model,
            spec.dimensions,
        ):
            switched_from = str(before) if before else ""
            profile = switch_profile(embedder)
        else:
            profile = before
        count = restart_embedding() if everything else pending_count()
        done = 0
        if progress is not None:
            progress(Progress(label=SWEEP_LABEL, done=0, total=count))

        def report(settled: int) -> None:
            nonlocal done
            renew()
            done += settled
            if progress is not None:
                progress(Progress(label=SWEEP_LABEL, done=done, total=max(count, done)))

        embedder.ensure_loaded()  # loaded once here, before the fork: the children share the weights
        sweep = _sweep(max(1, processes), report)
        return ReembedResult(str(profile), switched_from, count, sweep, pending_count())


def _settled(report: Callable[[int], object]) -> ProgressCallback:
    """The sweep reports how many it has done so far; reembed adds up what each batch added,
    from one process or several."""
    done = 0

    def on_progress(event: Progress) -> None:
        nonlocal done
        if event.done > done:
            report(event.done - done)
            done = event.done

    return on_progress


def _sweep(processes: int, report: Callable[[int], None]) -> SweepResult:
    if processes == 1:
        return embed_pending(progress=_settled(report))
    # Forked children inherit the settings (and a test's overrides) and open their own
    # database connections; a connection must never be shared across a fork.
    connections.close_all()
    context = multiprocessing.get_context("fork")
    events: multiprocessing.Queue[Any] = context.Queue()
    children = [
        context.Process(target=_sweep_shard, args=(Shard(index, processes), events), daemon=True)
        for index in range(processes)
    ]
    for child in children:
        child.start()
    total = SweepResult()
    running = len(children)
    while running:
        try:
            kind, value = events.get(timeout=1.0)
        except queue_module.Empty:
            if not any(child.is_alive() for child in children):
                break  # a child died without reporting; what it committed stands
            continue
        if kind == "batch":
            report(value)
        else:
            running -= 1
            total.embedded += value.embedded
            total.skipped_empty += value.skipped_empty
            total.batches += value.batches
            total.stopped_by = total.stopped_by or value.stopped_by
    for child in children:
        child.join()
    return total


def _sweep_shard(shard: Shard, events: multiprocessing.Queue[Any]) -> None:
    """One child's part: its shard of the pending mail, each batch reported to the parent."""
    try:
        result = embed_pending(shard=shard, progress=_settled(lambda settled: events.put(("batch", settled))))
    except Exception as error:  # reported by type only: a database error may quote a row
        logger.error("embedding shard %d of %d failed: %s", shard.index, shard.count, type(error).__name__)
        result = SweepResult(stopped_by="error")
    finally:
        connections.close_all()
    events.put(("done", result))

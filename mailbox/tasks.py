"""Celery tasks for synchronization: thin wrappers over mailbox.sync.engine."""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable
from functools import partial
from typing import Any

from celery import shared_task
from django.db import transaction
from django.utils import timezone

from accounts.models import MailAccount, SyncMode
from mailbox.models import Folder
from mailbox.services import attachment_text, coverage_status, embedding, lexical_search, reembedding
from mailbox.sync import folder_state, idle
from mailbox.sync.engine import synchronize_account
from mailbox.sync.folder_state import due_accounts, lease_seconds
from mailfathom.core.redis_store import redis_client

logger = logging.getLogger(__name__)


LOCKED_RETRIES = 5
# One task embeds for at most this long (it is scheduled every minute), so a large backlog
# is worked off by the schedule in slices rather than by one task holding a worker for
# hours. A slice bounded by time rather than by batches keeps a fast embedder busy: 20
# batches, the earlier bound, were 40 emails a minute with e5's batches of 2.
EMBED_SECONDS_PER_TASK = 50
# The same for attachment text: one slow file cannot hold a worker past this (plus its own
# wall-clock bound), and the schedule takes up the rest a minute later.
EXTRACT_SECONDS_PER_TASK = 50


@shared_task(name="mailbox.sync_account", bind=True, ignore_result=True, max_retries=LOCKED_RETRIES)
def sync_account(self: Any, account_pk: int, force: bool = False) -> dict[str, Any]:  # self: the bound Task
    """Synchronize one account; a vanished account is logged and skipped.

    A folder whose lease another run holds is tried again a second after that lease
    expires: the holder may be a worker that died mid-run, whose task this may be.
    """
    try:
        run = synchronize_account(account_pk, force=force)
    except MailAccount.DoesNotExist:
        logger.info("sync: account %s no longer exists; skipped", account_pk)
        return {"skipped": "account no longer exists"}
    if any(folder.skipped_locked for folder in run.folders):
        wait = min(float(lease_seconds()), folder_state.seconds_until_free(account_pk))
        raise self.retry(countdown=wait + 1)
    return {
        "account": run.account_id,
        "stored": sum(f.stored for f in run.folders),
        "failure": run.failure_code,
        "skipped": run.skipped,
    }


def queue_synchronization(account_pks: Iterable[int]) -> int:
    """Queue one forced run per distinct account, once the current transaction commits.

    The run creates the accounts' folder rows from their mappings, so it also works for an
    account never synchronized. Returns how many runs were queued.
    """
    distinct = sorted(set(account_pks))
    for account_pk in distinct:
        transaction.on_commit(partial(sync_account.delay, account_pk, force=True))
    return len(distinct)


RESUMING_KEY = "mailfathom:sync:resuming:{folder_pk}:{lease}"


@shared_task(name="mailbox.sync_due_accounts", ignore_result=True)
def sync_due_accounts() -> int:
    """Enqueue a run for every account due for polling, and for every account a dead run left.

    A folder whose run died (its lease expired while still held) is recorded as interrupted
    and its account queued at the first pass after the expiry, whatever its poll interval;
    a Redis key per dead lease queues it once, not on every pass while workers are busy.
    """
    now = timezone.now()
    folder_state.record_interrupted_runs(now)
    queued = {account.pk for account in due_accounts(now)}
    resumed = set()
    abandoned = folder_state.accounts_to_resume(now)
    if abandoned:
        client = redis_client()
        for account_pk, folder_pk, lease in abandoned:
            key = RESUMING_KEY.format(folder_pk=folder_pk, lease=lease)
            if client.set(key, "1", nx=True, ex=lease_seconds()) and account_pk not in queued:
                resumed.add(account_pk)
    for account_pk in sorted(queued | resumed):
        sync_account.delay(account_pk)
    if resumed:
        logger.info("sync: %d accounts queued to resume an interrupted run", len(resumed))
    return len(queued | resumed)


WATCH_SECONDS = 20 * 60
WATCHER_KEY = idle.WATCHER_KEY


@shared_task(name="mailbox.watch_folder", ignore_result=True)
def watch_folder(folder_pk: int) -> dict[str, Any]:
    """Hold an IDLE session on one folder for up to WATCH_SECONDS (push mode)."""
    try:
        result = idle.watch_folder(folder_pk, max_seconds=WATCH_SECONDS)
    except Folder.DoesNotExist:
        return {"skipped": "folder no longer exists"}
    finally:
        redis_client().delete(WATCHER_KEY.format(folder_pk=folder_pk))
    return {"synchronizations": result.synchronizations, "failure": result.failure_code}


@shared_task(name="mailbox.start_push_watchers", ignore_result=True)
def start_push_watchers() -> int:
    """Start an IDLE watcher for every mapped folder of push-mode accounts that has none.

    A Redis key marks a running watcher; it expires on its own if the worker died, so a
    watcher is restarted at most one watch period plus a minute after a crash.
    """
    client = redis_client()
    started = 0
    folders = Folder.objects.filter(
        account__in=MailAccount.objects.synchronized().filter(sync_mode=SyncMode.PUSH),
        mapping__isnull=False,
    )
    for folder_pk in folders.values_list("pk", flat=True):
        if client.set(WATCHER_KEY.format(folder_pk=folder_pk), "1", nx=True, ex=WATCH_SECONDS + 60):
            watch_folder.apply_async((folder_pk,), queue="push")
            started += 1
    return started


@shared_task(name="mailbox.refresh_term_stats", ignore_result=True)
def refresh_term_stats() -> int:
    """Rebuild the word statistics lexical ranking weighs query words by."""
    return lexical_search.refresh_term_stats()


@shared_task(name="mailbox.embed_pending", ignore_result=True)
def embed_pending() -> dict[str, Any]:
    """Embed mail that has no passage under the active profile, newest first, in bounded batches.

    One sweep at a time: the sweep slot (a Redis key expiring on its own if the worker dies)
    keeps the schedule from starting a second sweep over the same rows, and steps aside
    while `manage.py reembed` runs.
    """
    with reembedding.sweep_slot() as renew:
        if renew is None:
            return {"skipped": "a sweep is running"}
        result = embedding.embed_pending(until=time.monotonic() + EMBED_SECONDS_PER_TASK)
    if result.stopped_by == "profile":
        logger.warning("embedding sweep: the configured model is not the active profile's; run reembed")
    return {"embedded": result.embedded, "stopped_by": result.stopped_by}


@shared_task(name="mailbox.sample_coverage", ignore_result=True)
def sample_coverage() -> int:
    """Record how many emails are stored and embedded now (the status page's coverage chart)."""
    return coverage_status.record_coverage_sample().embedded


@shared_task(name="mailbox.extract_attachments", ignore_result=True)
def extract_attachments() -> dict[str, Any]:
    """Extract the text of pending emails' attachments, newest first, for a bounded slice of time.

    One pass at a time: the extraction slot keeps the schedule from starting a second pass
    over the same emails while one (or `manage.py extract_attachments`) runs.
    """
    with attachment_text.extraction_slot() as renew:
        if renew is None:
            return {"skipped": "a pass is running"}
        result = attachment_text.extract_pending(until=time.monotonic() + EXTRACT_SECONDS_PER_TASK)
    return {"emails": result.emails, "attachments": result.attachments}

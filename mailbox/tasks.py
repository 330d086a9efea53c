"""Celery tasks for synchronization: thin wrappers over mailbox.sync.engine."""

from __future__ import annotations

import logging
from datetime import timedelta

from celery import shared_task
from django.db.models import Min
from django.utils import timezone

from accounts.models import MailAccount
from mailbox.sync.engine import synchronize_account
from mailbox.sync.folder_state import lease_seconds

logger = logging.getLogger(__name__)


LOCKED_RETRIES = 5


@shared_task(name="mailbox.sync_account", bind=True, ignore_result=True, max_retries=LOCKED_RETRIES)
def sync_account(self, account_pk: int, force: bool = False) -> dict:  # type: ignore[no-untyped-def]
    """Synchronize one account; a vanished account is logged and skipped.

    A folder whose lease another run holds is tried again once that lease could have
    expired: the holder may be a worker that died mid-run, whose task this may be.
    """
    try:
        run = synchronize_account(account_pk, force=force)
    except MailAccount.DoesNotExist:
        logger.info("sync: account %s no longer exists; skipped", account_pk)
        return {"skipped": "account no longer exists"}
    if any(folder.skipped_locked for folder in run.folders):
        raise self.retry(countdown=lease_seconds() + 1)
    return {
        "account": run.account_id,
        "stored": sum(f.stored for f in run.folders),
        "failure": run.failure_code,
        "skipped": run.skipped,
    }


@shared_task(name="mailbox.sync_due_accounts", ignore_result=True)
def sync_due_accounts() -> int:
    """Enqueue a run for every served, enabled account whose poll interval has passed."""
    now = timezone.now()
    enqueued = 0
    accounts = (
        MailAccount.objects.served()
        .filter(sync_enabled=True)
        .annotate(last_progress=Min("synced_folders__last_committed_at"))
    )
    for account in accounts:
        due = account.last_progress is None or account.last_progress <= now - timedelta(
            seconds=account.poll_interval_seconds
        )
        if due:
            sync_account.delay(account.pk)
            enqueued += 1
    return enqueued

"""Celery tasks for reply drafting: thin callers of answering.drafting.runs."""

from __future__ import annotations

import logging
from typing import Any

from celery import shared_task

from accounts.models import MailAccount
from answering.drafting.runs import draft_account
from answering.models import RunTrigger

logger = logging.getLogger(__name__)


@shared_task(name="answering.draft_account", ignore_result=True)
def draft_account_task(account_pk: int, trigger: str = RunTrigger.SCHEDULE) -> dict[str, Any]:
    """One drafting run over one account; a vanished account is logged and skipped.

    `trigger` (a RunTrigger value) is what the run's record says started it; an unknown
    value is recorded as the schedule's rather than refused.
    """
    account = MailAccount.objects.filter(pk=account_pk).first()
    if account is None:
        logger.info("drafting: account %s no longer exists; skipped", account_pk)
        return {"skipped": "account no longer exists"}
    if trigger not in RunTrigger.values:
        trigger = RunTrigger.SCHEDULE
    summary = draft_account(account, trigger=trigger)
    return {
        "account": summary.account_id,
        "drafted": summary.drafted,
        "refused": sum(summary.refused.values()),
        "stopped_by": summary.stopped_by,
        "skipped": summary.skipped,
    }


def drafting_accounts() -> list[int]:
    """Primary keys of the accounts drafting runs for: served, with drafting on."""
    return list(
        MailAccount.objects.served().filter(drafting_enabled=True).order_by("pk").values_list("pk", flat=True)
    )


@shared_task(name="answering.draft_enabled_accounts", ignore_result=True)
def draft_enabled_accounts() -> int:
    """Queue a drafting run for every account with drafting on (the beat schedule's entry)."""
    pks = drafting_accounts()
    for pk in pks:
        draft_account_task.delay(pk)
    return len(pks)

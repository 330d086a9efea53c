"""What answering does when mailbox announces something (connected in AnsweringConfig.ready)."""

from __future__ import annotations

from functools import partial

from django.db import transaction

from accounts.models import MailAccount
from answering.models import RunTrigger
from answering.tasks import draft_account_task


def queue_drafting_after_synchronization(
    sender: object, account_pk: int, stored: int, **kwargs: object
) -> None:
    """Queue a drafting run for an account with drafting on once a run stored new mail.

    A run that stored nothing leaves the gate's answer as it was but for time passing, which
    the beat schedule covers. Queued after commit, so the worker sees the stored rows.
    """
    if stored <= 0:
        return
    if not MailAccount.objects.served().filter(pk=account_pk, drafting_enabled=True).exists():
        return
    transaction.on_commit(partial(draft_account_task.delay, account_pk, trigger=RunTrigger.SYNCHRONIZATION))


def queue_drafting_after_switch_on(sender: object, account_pk: int, **kwargs: object) -> None:
    """Queue the first drafting run of an account whose drafting was just switched on.

    Queued after the save commits, so the worker reads the switch on; without it the first
    drafts would wait for the beat schedule (up to its interval).
    """
    if not MailAccount.objects.served().filter(pk=account_pk, drafting_enabled=True).exists():
        return
    transaction.on_commit(partial(draft_account_task.delay, account_pk, trigger=RunTrigger.SWITCHED_ON))

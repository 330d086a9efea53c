"""Erase audit entries past each account's window, in bounded batches, oldest first.

One pass (docs/operations/compliance.md, Retention):

- visits every account, whether or not its trails are on now: switching a trail off stops
  new entries, and the ones already written still leave when their window says;
- erases, per account and per trail, at most `batch` whole entries (5,000 by default)
  whose run ended (answering) or whose act was requested (mutation) before the window;
  the next pass erases what this one left;
- erases mutation entries whose account row is gone by the window they were written under;
- erases expired access trail entries in a step of its own (`erase_expired_access_entries`),
  by the same rules and with its own window;
- touches nothing but the trails: a failure is logged naming the account identifier,
  counted in the result, and never reaches synchronization's state or its backoff.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from django.db import transaction
from django.db.models import DateTimeField, DurationField, ExpressionWrapper, F, QuerySet, Value
from django.utils import timezone

from accounts.models import MailAccount
from audit.access_models import AccessEntry
from audit.models import AnsweringRunEntry, MutationEntry
from audit.services import chain

logger = logging.getLogger(__name__)

BATCH = 5000


@dataclass
class RetentionPass:
    """What one pass erased, in counts, and which accounts it could not finish."""

    answering_erased: int = 0
    mutations_erased: int = 0
    access_erased: int = 0
    failed_accounts: list[str] = field(default_factory=list)


def erase_expired_entries(now: datetime | None = None, batch: int = BATCH) -> RetentionPass:
    """Run one retention pass over every account and both trails; never raises for one account."""
    now = now or timezone.now()
    result = RetentionPass()
    for account in MailAccount.objects.order_by("pk"):
        try:
            answering, mutations = erase_account_entries(account, now, batch)
        except Exception:
            logger.warning("audit retention: the pass failed for account %s", account.account_id)
            result.failed_accounts.append(account.account_id)
            continue
        result.answering_erased += answering
        result.mutations_erased += mutations
    try:
        result.mutations_erased += _erase_orphaned_mutations(now, batch)
    except Exception:
        logger.warning("audit retention: the pass failed for entries of deleted accounts")
    erase_expired_access_entries(now, batch, result)
    chain.compact_all()  # prune the links no held entry needs; a checkpoint keeps their hash
    logger.info(
        "audit retention: answering_erased=%d mutations_erased=%d access_erased=%d failed_accounts=%d",
        result.answering_erased,
        result.mutations_erased,
        result.access_erased,
        len(result.failed_accounts),
    )
    return result


def erase_account_entries(account: MailAccount, now: datetime, batch: int = BATCH) -> tuple[int, int]:
    """(answering, mutation) entries of `account` erased: at most `batch` of each, oldest first."""
    answering_before = now - timedelta(days=account.answering_audit_retention_days)
    mutation_before = now - timedelta(days=account.mutation_audit_retention_days)
    with transaction.atomic():
        answering = _erase_batch(AnsweringRunEntry.objects.expired(account, answering_before), batch)
        mutations = _erase_batch(MutationEntry.objects.expired(account, mutation_before), batch)
    return answering, mutations


def _erase_orphaned_mutations(now: datetime, batch: int) -> int:
    window = ExpressionWrapper(F("retention_days") * Value(timedelta(days=1)), output_field=DurationField())
    expired = (
        MutationEntry.objects.filter(account__isnull=True)
        .annotate(expires_at=ExpressionWrapper(F("requested_at") + window, output_field=DateTimeField()))
        .filter(expires_at__lt=now)
        .order_by("requested_at", "id")
    )
    with transaction.atomic():
        return _erase_batch(expired, batch)


def erase_expired_access_entries(now: datetime, batch: int, result: RetentionPass) -> None:
    """The access trail's step of a pass: every account by its own window, then entries of deleted accounts.

    At most `batch` entries per account, oldest first; a failure for one account is logged,
    added to `result.failed_accounts` (once per account) and the step goes on.
    """
    for account in MailAccount.objects.order_by("pk"):
        before = now - timedelta(days=account.access_trail_retention_days)
        try:
            with transaction.atomic():
                result.access_erased += _erase_batch(AccessEntry.objects.expired(account, before), batch)
        except Exception:
            logger.warning("audit retention: the access trail step failed for account %s", account.account_id)
            if account.account_id not in result.failed_accounts:
                result.failed_accounts.append(account.account_id)
    window = ExpressionWrapper(F("retention_days") * Value(timedelta(days=1)), output_field=DurationField())
    orphaned = (
        AccessEntry.objects.filter(account__isnull=True)
        .annotate(expires_at=ExpressionWrapper(F("accessed_at") + window, output_field=DateTimeField()))
        .filter(expires_at__lt=now)
        .order_by("accessed_at", "id")
    )
    try:
        with transaction.atomic():
            result.access_erased += _erase_batch(orphaned, batch)
    except Exception:
        logger.warning("audit retention: the access trail step failed for entries of deleted accounts")


def _erase_batch(expired: QuerySet[Any], batch: int) -> int:
    ids = list(expired.values_list("pk", flat=True)[:batch])
    if not ids:
        return 0
    # Counted as whole entries: the retrieved-email rows an answering entry holds go with it.
    with chain.removing(expired.model, ids, "retention"):  # the removals are linked as retention's
        expired.model.objects.filter(pk__in=ids).delete()
    return len(ids)

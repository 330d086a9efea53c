"""Erase audit entries past each account's window, in bounded batches, oldest first.

A schedule of its own rather than a step of synchronization, so it works for accounts whose
synchronization is off or backing off, and its failures never touch synchronization's state.
What a pass erases and what a legal hold keeps: docs/operations/compliance.md, Retention.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, TypeVar

from django.db import transaction
from django.db.models import (
    CharField,
    DateTimeField,
    DurationField,
    Exists,
    ExpressionWrapper,
    F,
    Func,
    OuterRef,
    Q,
    QuerySet,
    Value,
)
from django.utils import timezone

from accounts.models import MailAccount
from audit.access_models import AccessEntry
from audit.hold_models import HoldScope, LegalHold
from audit.models import AnsweringRunEmail, AnsweringRunEntry, MutationEntry
from audit.services import chain
from audit.services.holds import active_holds, covered_emails, held_account_ids
from mailbox.models import Email

logger = logging.getLogger(__name__)

BATCH = 5000
_Entry = TypeVar("_Entry", MutationEntry, AccessEntry)


@dataclass
class RetentionPass:
    """What one pass erased, in counts, and which accounts it could not finish."""

    answering_erased: int = 0
    mutations_erased: int = 0
    access_erased: int = 0
    failed_accounts: list[str] = field(default_factory=list)
    # Expired entries kept because an active legal hold covers them.
    answering_held: int = 0
    mutations_held: int = 0


@dataclass(frozen=True)
class AccountRetention:
    """What one account's share of a pass erased, and kept for a hold, per trail."""

    answering: int = 0
    mutations: int = 0
    answering_held: int = 0
    mutations_held: int = 0


def erase_expired_entries(now: datetime | None = None, batch: int = BATCH) -> RetentionPass:
    """Run one retention pass over every account and both trails; never raises for one account."""
    now = now or timezone.now()
    result = RetentionPass()
    holds = active_holds()  # read once: a hold placed mid-pass applies from the next one
    # Every account, its trails on or off: switching a trail off stops new entries, and the ones
    # already written still leave when their window says.
    for account in MailAccount.objects.order_by("pk"):
        try:
            erased = erase_account_entries(account, now, batch, holds=holds)
        except Exception:
            logger.warning("audit retention: the pass failed for account %s", account.account_id)
            result.failed_accounts.append(account.account_id)
            continue
        result.answering_erased += erased.answering
        result.mutations_erased += erased.mutations
        result.answering_held += erased.answering_held
        result.mutations_held += erased.mutations_held
    try:
        orphans, orphans_held = _erase_orphaned_mutations(now, batch, holds)
        result.mutations_erased += orphans
        result.mutations_held += orphans_held
    except Exception:
        logger.warning("audit retention: the pass failed for entries of deleted accounts")
    erase_expired_access_entries(now, batch, result, held=held_account_ids(holds))
    chain.compact_all()  # prune the links no held entry needs; a checkpoint keeps their hash
    logger.info(
        "audit retention: answering_erased=%d mutations_erased=%d access_erased=%d "
        "failed_accounts=%d held=%d",
        result.answering_erased,
        result.mutations_erased,
        result.access_erased,
        len(result.failed_accounts),
        result.answering_held + result.mutations_held,
    )
    return result


def erase_account_entries(
    account: MailAccount, now: datetime, batch: int = BATCH, *, holds: list[LegalHold] | None = None
) -> AccountRetention:
    """Entries of `account` erased (at most `batch` of each trail, oldest first) and kept for a hold."""
    holds = active_holds() if holds is None else holds
    answering_before = now - timedelta(days=account.answering_audit_retention_days)
    mutation_before = now - timedelta(days=account.mutation_audit_retention_days)
    with transaction.atomic():
        answering = AnsweringRunEntry.objects.expired(account, answering_before)
        mutations = MutationEntry.objects.expired(account, mutation_before)
        if account.account_id in held_account_ids(holds):
            return AccountRetention(answering_held=answering.count(), mutations_held=mutations.count())
        relevant = [
            hold
            for hold in holds
            if hold.scope != HoldScope.ACCOUNT
            and (not hold.account_ids or account.account_id in hold.account_ids)
        ]
        if not relevant:
            return AccountRetention(
                answering=_erase_batch(answering, batch), mutations=_erase_batch(mutations, batch)
            )
        answering_held = _reading_held_mail(account, answering, relevant)
        mutations_held = _naming_held_mail(account, mutations, relevant)
        return AccountRetention(
            answering=_erase_batch(answering.exclude(answering_held), batch),
            mutations=_erase_batch(mutations.exclude(mutations_held), batch),
            answering_held=answering.filter(answering_held).count(),
            mutations_held=mutations.filter(mutations_held).count(),
        )


class _MessageIdHash(Func):
    """The hex SHA-256 of a stored Message-ID, as audit.services.mutations.message_id_hash writes it."""

    template = "ENCODE(SHA256(CONVERT_TO(BTRIM(%(expressions)s), 'UTF8')), 'hex')"
    output_field = CharField()


def _reading_held_mail(
    account: MailAccount, expired: QuerySet[AnsweringRunEntry], holds: list[LegalHold]
) -> Q:
    """Answering entries among `expired` that read an email one of `holds` covers."""
    read = Email.objects.filter(
        account=account,
        pk__in=AnsweringRunEmail.objects.filter(entry__in=expired.values("pk")).values("email_id"),
    )
    covered = Q(pk__in=[])
    for hold in holds:
        covered |= Q(email_id__in=covered_emails(hold, read).values("pk"))
    return Q(Exists(AnsweringRunEmail.objects.filter(covered, entry=OuterRef("pk"))))


def _naming_held_mail(account: MailAccount, expired: QuerySet[MutationEntry], holds: list[LegalHold]) -> Q:
    """Mutation entries among `expired` that name (by Message-ID hash) an email one of `holds` covers."""
    named = (
        Email.objects.filter(account=account)
        .exclude(message_id="")
        .annotate(named_by=_MessageIdHash("message_id"))
        .filter(named_by__in=expired.exclude(message_id_hash="").values("message_id_hash"))
    )
    covered = Q(pk__in=[])
    for hold in holds:
        covered |= Q(pk__in=covered_emails(hold, named).values("pk"))
    hashes = sorted({str(value) for value in named.filter(covered).values_list("named_by", flat=True)})
    return Q(message_id_hash__in=hashes) if hashes else Q(pk__in=[])


def _erase_orphaned_mutations(now: datetime, batch: int, holds: list[LegalHold]) -> tuple[int, int]:
    """(erased, held) mutation entries of deleted accounts; an account hold keeps its entries."""
    expired = _expired_orphans(MutationEntry.objects.all(), "requested_at", now)
    held = Q(account_identifier__in=sorted(held_account_ids(holds)))
    with transaction.atomic():
        return _erase_batch(expired.exclude(held), batch), expired.filter(held).count()


def erase_expired_access_entries(
    now: datetime, batch: int, result: RetentionPass, held: set[str] | frozenset[str] = frozenset()
) -> None:
    """The access trail's step of a pass: every account by its own window, then entries of deleted accounts.

    At most `batch` entries per account, oldest first (an account a hold names is skipped:
    its entries are kept); a failure for one account is logged,
    added to `result.failed_accounts` (once per account) and the step goes on.
    """
    for account in MailAccount.objects.order_by("pk"):
        if account.account_id in held:  # an account hold keeps every trail of the account
            continue
        before = now - timedelta(days=account.access_trail_retention_days)
        try:
            with transaction.atomic():
                result.access_erased += _erase_batch(AccessEntry.objects.expired(account, before), batch)
        except Exception:
            logger.warning("audit retention: the access trail step failed for account %s", account.account_id)
            if account.account_id not in result.failed_accounts:
                result.failed_accounts.append(account.account_id)
    orphaned = _expired_orphans(AccessEntry.objects.all(), "accessed_at", now)
    try:
        with transaction.atomic():
            result.access_erased += _erase_batch(orphaned, batch)
    except Exception:
        logger.warning("audit retention: the access trail step failed for entries of deleted accounts")


def _expired_orphans(entries: QuerySet[_Entry], written_at: str, now: datetime) -> QuerySet[_Entry]:
    """Entries whose account row is gone, past the window recorded on them when written, oldest first."""
    window = ExpressionWrapper(F("retention_days") * Value(timedelta(days=1)), output_field=DurationField())
    return (
        entries.filter(account__isnull=True)
        .annotate(expires_at=ExpressionWrapper(F(written_at) + window, output_field=DateTimeField()))
        .filter(expires_at__lt=now)
        .order_by(written_at, "id")
    )


def _erase_batch(expired: QuerySet[Any], batch: int) -> int:
    ids = list(expired.values_list("pk", flat=True)[:batch])
    if not ids:
        return 0
    # Counted as whole entries: the retrieved-email rows an answering entry holds go with it.
    with chain.removing(expired.model, ids, "retention"):  # the removals are linked as retention's
        expired.model.objects.filter(pk__in=ids).delete()
    return len(ids)

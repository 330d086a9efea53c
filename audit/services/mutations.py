"""Record one change MailFathom made to a mail server or to the stored copy: the one way in.

Every act that changes something calls `record_mutation` once (docs/operations/compliance.md,
Mutation trail). Only accounts with the trail on get an entry (it is personal data the
operator may choose not to hold); the email is named by plain values, never a foreign key,
so the entry outlives the deletion; `counts` holds whole numbers only. Call it before
deleting the account row, in the same transaction. A failed write raises: an act whose record
is required is the caller's to abandon or retry.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime

from django.utils import timezone

from accounts.models import MailAccount
from audit.models import MutationEntry, MutationKind, MutationOutcome, RequesterKind

_COUNT_NAME = re.compile(r"[a-z][a-z0-9_]{0,63}")
MAX_COUNTS = 32


@dataclass(frozen=True)
class Mutation:
    """One act, as plain values; `email` fields stay empty for an act on a whole account or folder."""

    kind: MutationKind
    requester: str
    requester_kind: RequesterKind
    account_pk: int
    requested_at: datetime
    outcome: MutationOutcome
    completed_at: datetime | None = None
    failure_code: int | None = None
    message_id_hash: str = ""
    folder_alias: str = ""
    uid: int | None = None
    counts: Mapping[str, int] = field(default_factory=dict)


def message_id_hash(message_id: str) -> str:
    """The hex SHA-256 of a Message-ID as stored (stripped): how an entry names an email."""
    return hashlib.sha256(message_id.strip().encode("utf-8")).hexdigest()


def record_mutation(mutation: Mutation) -> MutationEntry | None:
    """Write `mutation` to its account's trail if the trail is on; None when it is off or the account is gone.

    Raises ValueError for counts that are not named whole numbers, or a failure code that
    is not one of the five-digit codes (docs/errors.md).
    """
    counts = _checked_counts(mutation.counts)
    if mutation.failure_code is not None and not 10000 <= mutation.failure_code <= 99999:
        raise ValueError("failure_code must be a five-digit MailFathom code")
    if mutation.message_id_hash and not re.fullmatch(r"[0-9a-f]{64}", mutation.message_id_hash):
        raise ValueError("message_id_hash must be a hex SHA-256 (see message_id_hash())")
    account = MailAccount.objects.filter(pk=mutation.account_pk).first()
    if account is None or not account.mutation_audit_enabled:
        return None
    return MutationEntry.objects.create(
        kind=mutation.kind,
        requester=mutation.requester[:200],
        requester_kind=mutation.requester_kind,
        account=account,
        account_identifier=account.account_id,
        message_id_hash=mutation.message_id_hash,
        folder_alias=mutation.folder_alias,
        uid=mutation.uid,
        requested_at=mutation.requested_at,
        completed_at=mutation.completed_at,
        outcome=mutation.outcome,
        failure_code=mutation.failure_code,
        counts=counts,
        retention_days=account.mutation_audit_retention_days,
    )


def _checked_counts(counts: Mapping[str, int]) -> dict[str, int]:
    if len(counts) > MAX_COUNTS:
        raise ValueError(f"counts holds at most {MAX_COUNTS} names")
    checked: dict[str, int] = {}
    for name, value in counts.items():
        if not isinstance(name, str) or not _COUNT_NAME.fullmatch(name):
            raise ValueError("a count is named in lower-case snake_case, at most 64 characters")
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ValueError("a count is a whole number, 0 or more")
        checked[name] = value
    return checked


def record_account_deleted(account: MailAccount, requester: str) -> MutationEntry | None:
    """Record, before the row goes, that a person deleted `account` with its stored mail."""
    now = timezone.now()
    return record_mutation(
        Mutation(
            kind=MutationKind.ACCOUNT_MAIL_DELETED,
            requester=requester,
            requester_kind=RequesterKind.USER,
            account_pk=account.pk,
            requested_at=now,
            completed_at=now,
            outcome=MutationOutcome.PERFORMED,
            counts={"emails": account.emails.count(), "folders": account.synced_folders.count()},
        )
    )


def record_folder_reset(account_pk: int, folder_alias: str, emails: int) -> MutationEntry | None:
    """Record that synchronization dropped a folder's mail because the server voided its UIDs."""
    now = timezone.now()
    return record_mutation(
        Mutation(
            kind=MutationKind.FOLDER_MAIL_DELETED,
            requester="synchronization (new UIDVALIDITY)",
            requester_kind=RequesterKind.TASK,
            account_pk=account_pk,
            requested_at=now,
            completed_at=now,
            outcome=MutationOutcome.PERFORMED,
            folder_alias=folder_alias[:200],
            counts={"emails": emails},
        )
    )

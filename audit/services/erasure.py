"""Erasure requests: preview and record, execute and record, and the erasure statement.

The mailbox app removes the mail (mailbox.services.erasure); this module keeps the record
of the act (audit.erasure_models.ErasureRequestRecord) and writes it to the mutation trail.
Addresses are never stored: a request keeps one keyed hash per address, and executing a
request means supplying the addresses again, which must hash to the stored hashes. The
record therefore cannot serve as a list of the people who asked to be forgotten.
See docs/operations/compliance.md (Erasure requests) and docs/operations/erasure.md.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db import transaction
from django.utils import timezone

from accounts.models import MailAccount
from audit.erasure_models import ErasureRequesterKind, ErasureRequestRecord, ErasureStatus
from audit.models import MutationKind, MutationOutcome, RequesterKind
from audit.services.holds import refuse_held_erasure
from audit.services.mutations import Mutation, record_mutation
from mailbox.services.erasure import KINDS, AccountCounts, ErasureRequest, erasure_request
from mailbox.services.erasure import execute_erasure as erase_mail
from mailbox.services.erasure import preview_erasure as count_mail
from mailfathom.core import signing
from mailfathom.core.errors import FILTER_REFUSED, Code, MailFathomError

logger = logging.getLogger(__name__)

PURPOSE = "erasure-request"
ERASURE_REQUEST_NOT_OPEN = Code.ERASURE_REQUEST_NOT_OPEN
GUIDE = "docs/operations/erasure.md"
CANNOT_ERASE = (
    "This product erases only its own stored copy. The messages are still on the mail server "
    "itself, in every folder they were in, until they are deleted and expunged there.",
    "Backups of the database taken before the erasure still hold the erased mail until they "
    "expire or are removed; after restoring one, the erasure must be executed again.",
    "Deleted rows remain in PostgreSQL's files and write-ahead log until the database reuses "
    "that space; they can no longer be read through SQL or a dump.",
)
# The mutation trail knows users, API tokens and tasks; a command run is recorded as a task.
_TRAIL_KIND = {
    ErasureRequesterKind.USER: RequesterKind.USER,
    ErasureRequesterKind.API_TOKEN: RequesterKind.API_TOKEN,
    ErasureRequesterKind.COMMAND: RequesterKind.TASK,
}


@dataclass(frozen=True)
class Requester:
    """Who acts: a user name, an API token's name, or the OS user running a command."""

    name: str
    kind: ErasureRequesterKind


@dataclass(frozen=True)
class RequestedErasure:
    """A recorded request and what executing it would remove, per account and kind."""

    request_id: uuid.UUID
    accounts: tuple[AccountCounts, ...]

    def total(self, kind: str) -> int:
        return sum(getattr(counts, kind) for counts in self.accounts)


@dataclass(frozen=True)
class ErasureStatement:
    """What an erasure removed, when, at whose request: counts and hashes, never an address."""

    request_id: uuid.UUID
    status: str
    requested_by: str
    requested_by_kind: str
    requested_at: datetime
    executed_by: str
    executed_by_kind: str
    executed_at: datetime | None
    address_hashes: tuple[str, ...]
    account_ids: tuple[str, ...]  # the request's scope; empty: every account
    received_on_or_after: datetime | None
    received_before: datetime | None
    accounts: tuple[AccountCounts, ...]  # what was erased; empty until executed
    cannot_erase: tuple[str, ...] = CANNOT_ERASE
    guide: str = GUIDE

    def total(self, kind: str) -> int:
        return sum(getattr(counts, kind) for counts in self.accounts)


def address_hash(address: str, key: bytes) -> str:
    """The hex HMAC-SHA256 of a case-folded address (as erasure_request() folds it) under `key`."""
    return hmac.new(key, address.encode("utf-8", "surrogatepass"), hashlib.sha256).hexdigest()


def request_erasure(
    addresses: Iterable[str],
    *,
    account_ids: Iterable[str] | None = None,
    received_on_or_after: datetime | None = None,
    received_before: datetime | None = None,
    requester: Requester,
) -> RequestedErasure:
    """Validate a request, count what it would remove, and record it with address hashes only.

    Refuses an unusable argument with 51002 (mailbox.services.erasure.erasure_request).
    Raises RuntimeError when the key ring is empty (a deployment mailfathom.checks refuses).
    """
    request = erasure_request(
        addresses,
        account_ids=account_ids,
        received_on_or_after=received_on_or_after,
        received_before=received_before,
    )
    ring = signing.derived_keys(PURPOSE)
    if not ring:
        raise RuntimeError("MAILFATHOM_KEYRING is empty")
    preview = count_mail(request)
    record = ErasureRequestRecord.objects.create(
        requested_by=requester.name[:200],
        requested_by_kind=requester.kind,
        requested_at=timezone.now(),
        address_hashes=sorted(address_hash(address, ring[0]) for address in request.addresses),
        account_ids=list(request.account_ids),
        received_on_or_after=request.received_on_or_after,
        received_before=request.received_before,
        preview_counts=_as_json(preview.accounts),
    )
    logger.info("erasure request recorded: %d accounts would be touched", len(preview.accounts))
    return RequestedErasure(request_id=record.id, accounts=preview.accounts)


def execute_erasure_request(
    request_id: uuid.UUID | str, addresses: Iterable[str], *, requester: Requester
) -> ErasureStatement:
    """Execute a previewed request, given its addresses again; record it; return the statement.

    One transaction: the mail is removed, one mutation entry is written per account that
    lost mail (where the account's trail is on), and the record is marked executed; if any
    of it fails, none of it happened. Refused with 51002 when the addresses do not hash to
    the request's, and with 53004 when no such request is held or it is not open (already
    executed, or abandoned). A failed attempt leaves its code on the record.
    """
    record_id = _record_id(request_id)
    try:
        addresses = refuse_held_erasure(record_id, addresses)  # 58001 before anything is removed
        with transaction.atomic():
            record = _open_record(record_id)
            request = _request_again(record, addresses)
            started = timezone.now()
            result = erase_mail(request)
            completed = timezone.now()
            entries = []
            for counts in result.accounts:
                account = MailAccount.objects.filter(account_id=counts.account_id).only("pk").first()
                if account is None:  # deleted in between: the erasure lock spans folders, not accounts
                    continue
                entry = record_mutation(
                    Mutation(
                        kind=MutationKind.ERASURE_EXECUTED,
                        requester=requester.name,
                        requester_kind=_TRAIL_KIND[requester.kind],
                        account_pk=account.pk,
                        requested_at=started,
                        completed_at=completed,
                        outcome=MutationOutcome.PERFORMED,
                        counts={**_kinds(counts), "addresses": len(request.addresses)},
                    )
                )
                if entry is not None:
                    entries.append(entry)
            record.status = ErasureStatus.EXECUTED
            record.executed_at = completed
            record.executed_by = requester.name[:200]
            record.executed_by_kind = requester.kind
            record.statement_counts = _as_json(result.accounts)
            record.failure_code = None
            record.save()
            record.mutation_entries.add(*entries)
    except MailFathomError as error:
        if error.code != ERASURE_REQUEST_NOT_OPEN:
            ErasureRequestRecord.objects.filter(pk=record_id, status=ErasureStatus.PREVIEWED).update(
                failure_code=error.code
            )
        raise
    logger.info("erasure request executed: %d accounts", len(result.accounts))
    return _statement(record)


def abandon_erasure_request(request_id: uuid.UUID | str) -> None:
    """Close a previewed request without executing it; refused with 53004 when it is not open."""
    with transaction.atomic():
        record = _open_record(_record_id(request_id))
        record.status = ErasureStatus.ABANDONED
        record.save(update_fields=["status"])


def erasure_statement(request_id: uuid.UUID | str) -> ErasureStatement:
    """The statement of a request; refused with 53004 when no such request is held.

    A request not executed yet has a statement with no accounts and no execution time.
    """
    record = ErasureRequestRecord.objects.filter(pk=_record_id(request_id)).first()
    if record is None:
        raise _not_held()
    return _statement(record)


# --- Helpers --------------------------------------------------------------------------------


def _record_id(value: uuid.UUID | str) -> uuid.UUID:
    try:
        return value if isinstance(value, uuid.UUID) else uuid.UUID(str(value)[:64])
    except ValueError as error:
        raise _not_held() from error


def _not_held() -> MailFathomError:
    return MailFathomError(
        ERASURE_REQUEST_NOT_OPEN,
        "The requestId argument names no erasure request this deployment holds.",
        argument="requestId",
    )


def _open_record(record_id: uuid.UUID) -> ErasureRequestRecord:
    # Locked: two executions racing each other find one of them executed, not both open.
    record = ErasureRequestRecord.objects.select_for_update().filter(pk=record_id).first()
    if record is None:
        raise _not_held()
    if record.status != ErasureStatus.PREVIEWED:
        done = (
            "was already executed; an erasure request runs once"
            if record.status == ErasureStatus.EXECUTED
            else "was abandoned"
        )
        raise MailFathomError(
            ERASURE_REQUEST_NOT_OPEN,
            f"The erasure request named by the requestId argument {done}. Make a new request instead.",
            argument="requestId",
        )
    return record


def _request_again(record: ErasureRequestRecord, addresses: Iterable[str]) -> ErasureRequest:
    request = erasure_request(
        addresses,
        account_ids=record.account_ids,
        received_on_or_after=record.received_on_or_after,
        received_before=record.received_before,
    )
    stored = sorted(record.address_hashes)
    # Every ring key is tried: a request made before a rotation still executes after it.
    for key in signing.derived_keys(PURPOSE):
        supplied = sorted(address_hash(address, key) for address in request.addresses)
        if hmac.compare_digest("".join(supplied), "".join(stored)):
            return request
    raise MailFathomError(
        FILTER_REFUSED,
        "The addresses argument must list exactly the addresses the erasure request was made for.",
        argument="addresses",
    )


def _kinds(counts: AccountCounts) -> dict[str, int]:
    return {kind: getattr(counts, kind) for kind in KINDS}


def _as_json(accounts: Iterable[AccountCounts]) -> dict[str, dict[str, int]]:
    return {counts.account_id: _kinds(counts) for counts in accounts}


def _from_json(value: dict[str, Any]) -> tuple[AccountCounts, ...]:
    return tuple(
        AccountCounts(account_id=name, **{kind: int(kinds.get(kind, 0)) for kind in KINDS})
        for name, kinds in sorted(value.items())
    )


def preview_counts(record: ErasureRequestRecord) -> tuple[AccountCounts, ...]:
    """A record's preview counts as AccountCounts (for admin and the statement page)."""
    return _from_json(record.preview_counts)


def _statement(record: ErasureRequestRecord) -> ErasureStatement:
    return ErasureStatement(
        request_id=record.id,
        status=record.status,
        requested_by=record.requested_by,
        requested_by_kind=record.requested_by_kind,
        requested_at=record.requested_at,
        executed_by=record.executed_by,
        executed_by_kind=record.executed_by_kind,
        executed_at=record.executed_at,
        address_hashes=tuple(record.address_hashes),
        account_ids=tuple(record.account_ids),
        received_on_or_after=record.received_on_or_after,
        received_before=record.received_before,
        accounts=_from_json(record.statement_counts) if record.status == ErasureStatus.EXECUTED else (),
    )

"""Erasure requests: preview and record, execute and record, and the erasure statement.

The mailbox app removes the mail (mailbox.services.erasure); this module keeps the record of
the act. The record holds keyed hashes of the addresses, never the addresses, so it cannot
serve as a list of the people who asked to be forgotten. See docs/operations/compliance.md
(Erasure requests) and docs/operations/erasure.md.
"""

from __future__ import annotations

import json
import logging
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from accounts.models import MailAccount
from audit.erasure_models import ErasureRequesterKind, ErasureRequestRecord, ErasureStatus
from audit.models import MutationKind, MutationOutcome, RequesterKind
from audit.services import arguments, chain
from audit.services.address_hashes import hashes_match, recorded_hashes
from audit.services.holds import refuse_held_erasure
from audit.services.mutations import Mutation, record_mutation
from mailbox.services.erasure import KINDS, AccountCounts, ErasureRequest, ErasureResult, erasure_request
from mailbox.services.erasure import execute_erasure as erase_mail
from mailbox.services.erasure import preview_erasure as count_mail
from mailbox.services.erasure_cleanup import CleanupStep, rewrite_after_erasure
from mailfathom.core import signing
from mailfathom.core.errors import FILTER_REFUSED, Code, MailFathomError

logger = logging.getLogger(__name__)

PURPOSE = "erasure-request"
STATEMENT_PURPOSE = "erasure-statement"
STATEMENT_FORMAT = "mailfathom-erasure-statement/1"
SIGNATURE_ALGORITHM = "Ed25519"
ERASURE_REQUEST_NOT_OPEN = Code.ERASURE_REQUEST_NOT_OPEN
SAME_PERSON = Code.SAME_PERSON
GUIDE = "docs/operations/erasure.md"
CANNOT_ERASE = (
    "This product erases only its own stored copy. The messages are still on the mail server "
    "itself, in every folder they were in, until they are deleted and expunged there.",
    "Backups of the database taken before the erasure still hold the erased mail until they "
    "expire or are removed; after restoring one, the erasure must be executed again.",
    "Write-ahead log segments already copied to a WAL archive (or to a standby) before the "
    "clean-up hold the erased rows until that archive's retention drops them; segments "
    "PostgreSQL recycles are renamed and overwritten as new changes arrive, not wiped.",
)
WHAT_STAYS = (
    "The person's own words quoted in mail that other people sent or received (a reply that "
    "quotes their message, a forward of it) stay: that mail is not theirs unless one of "
    "their addresses is its sender or a recipient, so it was not erased.",
    "Mentions of the person's name, or of an address of theirs, in the subject, body or "
    "attachments of other people's mail stay, with the passages and the word statistics "
    "made from that mail.",
    "The records of this erasure stay: this statement, the request record and the mutation "
    "trail entries. They hold counts and keyed hashes, never an address or any content.",
)
HOW_TO_FIND = (
    "Search for the person's name and for each of their addresses as plain words: the "
    "search_emails tool (MCP) or the people search page (/people/search/) finds the emails "
    "whose subject, body or attachment text mention them, in the accounts the searcher may read.",
    "An email found that way can only be removed as the mail of the people it belongs to "
    "(an erasure for its sender or recipients) or with its folder or account: MailFathom does "
    "not cut a passage out of an email.",
)
# The mutation trail knows users, API tokens and tasks; a command run is recorded as a task.
_TRAIL_KIND = {
    ErasureRequesterKind.USER: RequesterKind.USER,
    ErasureRequesterKind.API_TOKEN: RequesterKind.API_TOKEN,
    ErasureRequesterKind.COMMAND: RequesterKind.TASK,
}


@dataclass(frozen=True)
class Requester:
    """Who acts: a user name, an API token's name, or the user a command runs as.

    `person` is the Django user name of the human behind it (the user; a token's owner; the
    command's --as user): what the four-eyes rule compares. Empty: the name stands for it.
    """

    name: str
    kind: ErasureRequesterKind
    person: str = ""

    @property
    def who(self) -> str:
        return self.person or self.name


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
    requested_by_person: str = ""
    executed_by_person: str = ""
    single_operator: bool = False
    accounts_only: bool = False
    message_id_hashes: tuple[str, ...] = ()
    suppressions: Mapping[str, Any] = field(default_factory=dict)
    removed_rows: Mapping[str, Any] = field(default_factory=dict)
    cleanup_completed_at: datetime | None = None
    cleanup_steps: tuple[Mapping[str, str], ...] = ()
    # The signed document and its signature; None and "" until the request is executed.
    document: Mapping[str, Any] | None = None
    signature: str = ""
    public_key: str = ""
    signed_at: datetime | None = None
    what_stays: tuple[str, ...] = WHAT_STAYS
    how_to_find: tuple[str, ...] = HOW_TO_FIND
    cannot_erase: tuple[str, ...] = CANNOT_ERASE
    guide: str = GUIDE

    def total(self, kind: str) -> int:
        return sum(getattr(counts, kind) for counts in self.accounts)


def request_erasure(
    addresses: Iterable[str],
    *,
    account_ids: Iterable[str] | None = None,
    received_on_or_after: datetime | None = None,
    received_before: datetime | None = None,
    accounts_only: bool = False,
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
        accounts_only=accounts_only,
    )
    hashes = recorded_hashes(request.addresses, PURPOSE)
    preview = count_mail(request)
    record = ErasureRequestRecord.objects.create(
        requested_by=requester.name[:200],
        requested_by_kind=requester.kind,
        requested_by_person=requester.who[:150],
        requested_at=timezone.now(),
        address_hashes=hashes,
        account_ids=list(request.account_ids),
        received_on_or_after=request.received_on_or_after,
        received_before=request.received_before,
        accounts_only=request.accounts_only,
        preview_counts=_as_json(preview.accounts),
    )
    logger.info("erasure request recorded: %d accounts would be touched", len(preview.accounts))
    return RequestedErasure(request_id=record.id, accounts=preview.accounts)


def execute_erasure_request(
    request_id: uuid.UUID | str,
    addresses: Iterable[str],
    *,
    requester: Requester,
    accounts_only: bool | None = None,
) -> ErasureStatement:
    """Execute a previewed request, given its addresses again; record it; return the statement.

    One transaction: the mail is removed, one mutation entry is written per account that
    lost mail (where the account's trail is on), and the record is marked executed with its
    signed statement; if any of it fails, none of it happened. Refused with 58002 when the
    executor is the person who requested it (unless MAILFATHOM_ERASURE_SINGLE_OPERATOR), with
    51002 when the addresses do not hash to the request's, and with 53004 when no such
    request is held or it is not open (already executed, or abandoned). A failed attempt
    leaves its code on the record. `accounts_only` (None: as requested) sets where the
    erased mail is suppressed. The clean-up is queued once the transaction commits.
    """
    record_id = _record_id(request_id)
    try:
        addresses = refuse_held_erasure(record_id, addresses)  # 58001 before anything is removed
        with transaction.atomic():
            record = _open_record(record_id)
            single_operator = bool(settings.MAILFATHOM.erasure_single_operator)
            if not single_operator and _same_person(record, requester):
                raise MailFathomError(SAME_PERSON, SAME_PERSON.sentence)
            if accounts_only is not None:
                record.accounts_only = bool(accounts_only)
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
            record.executed_by_person = requester.who[:150]
            record.single_operator = single_operator
            record.statement_counts = _as_json(result.accounts)
            record.message_id_hashes = sorted({e.message_id_hash for e in result.erased if e.message_id_hash})
            record.suppressions = _suppressions(result)
            record.removed_rows = {
                rows.label: {"count": rows.count, "ids": list(rows.ids)} for rows in result.cascaded
            }
            record.failure_code = None
            _sign(record)
            record.save()
            record.mutation_entries.add(*entries)
            transaction.on_commit(_queue_cleanup)
    except MailFathomError as error:
        if error.code != ERASURE_REQUEST_NOT_OPEN:
            with transaction.atomic():  # update() sends no signal: the record is re-linked here
                ErasureRequestRecord.objects.filter(pk=record_id, status=ErasureStatus.PREVIEWED).update(
                    failure_code=error.code
                )
                chain.link_states("erasure", [record_id])
        raise
    logger.info("erasure request executed: %d accounts", len(result.accounts))
    return _statement(record)


def clean_up_after_erasure() -> tuple[CleanupStep, ...]:
    """Rewrite the tables erasures touched, checkpoint and switch the WAL; record it.

    Every executed request not cleaned up yet gets the steps and the time on its record,
    and its statement is signed again so the signed document says the clean-up ran. Must
    run outside a transaction (the management command `erasure_cleanup`, or the task
    queued after each execution).
    """
    started = timezone.now()
    steps = rewrite_after_erasure()
    completed = timezone.now()
    pending = ErasureRequestRecord.objects.filter(
        status=ErasureStatus.EXECUTED, cleanup_completed_at__isnull=True, executed_at__lte=started
    )
    for record_id in pending.values_list("pk", flat=True):
        with transaction.atomic():
            record = ErasureRequestRecord.objects.select_for_update().get(pk=record_id)
            record.cleanup_completed_at = completed
            record.cleanup_steps = [step.as_json() for step in steps]
            _sign(record)
            record.save()
    return steps


def verify_statement(document: Mapping[str, Any], signature: str, public_key: str) -> bool:
    """Whether `signature` signs `document` (as canonical JSON) under `public_key`, and that
    key is one of this deployment's statement keys (every ring key counts)."""
    if public_key not in signing.public_keys(STATEMENT_PURPOSE):
        return False
    return signing.verify_document(canonical_json(document), signature, public_key)


def canonical_json(document: Mapping[str, Any]) -> bytes:
    """The bytes a statement's signature covers: keys sorted, no spaces, UTF-8."""
    return json.dumps(document, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


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
    return arguments.record_id(value, "requestId", _not_held())


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


def _same_person(record: ErasureRequestRecord, executor: Requester) -> bool:
    """Whether the executor is the person who made the request (user names compared without
    regard to case). A record made before the person was kept compares its requester's name."""
    if record.requested_by_person:
        return record.requested_by_person.casefold() == executor.who.casefold()
    return record.requested_by.casefold() in {executor.name.casefold(), executor.who.casefold()}


def _request_again(record: ErasureRequestRecord, addresses: Iterable[str]) -> ErasureRequest:
    request = erasure_request(
        addresses,
        account_ids=record.account_ids,
        received_on_or_after=record.received_on_or_after,
        received_before=record.received_before,
        accounts_only=record.accounts_only,
    )
    # Every ring key is tried: a request made before a rotation still executes after it.
    if hashes_match(request.addresses, record.address_hashes, PURPOSE):
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


def _suppressions(result: ErasureResult) -> dict[str, Any]:
    per_account: dict[str, int] = {}
    for erased in result.erased:
        per_account[erased.account_id] = per_account.get(erased.account_id, 0) + 1
    return {
        "scope": "deployment" if result.deployment_wide else "accounts",
        "written": result.suppressions,
        "ids": list(result.suppression_ids),
        "per_account": dict(sorted(per_account.items())),
        "without_message_id": sum(1 for erased in result.erased if not erased.message_id_hash),
    }


def _rfc3339(moment: datetime | None) -> str | None:
    if moment is None:
        return None
    return moment.astimezone(UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")


def _document(record: ErasureRequestRecord, signed_at: datetime) -> dict[str, Any]:
    """The statement as plain JSON values: what the signature covers."""
    return {
        "format": STATEMENT_FORMAT,
        "request_id": str(record.id),
        "status": record.status,
        "requested_by": record.requested_by,
        "requested_by_kind": record.requested_by_kind,
        "requested_by_person": record.requested_by_person,
        "requested_at": _rfc3339(record.requested_at),
        "executed_by": record.executed_by,
        "executed_by_kind": record.executed_by_kind,
        "executed_by_person": record.executed_by_person,
        "executed_at": _rfc3339(record.executed_at),
        "single_operator": record.single_operator,
        "address_hashes": sorted(record.address_hashes),
        "account_scope": list(record.account_ids),
        "received_on_or_after": _rfc3339(record.received_on_or_after),
        "received_before": _rfc3339(record.received_before),
        "accounts_only": record.accounts_only,
        "erased": record.statement_counts,
        "message_id_hashes": list(record.message_id_hashes),
        "suppressions": record.suppressions,
        "removed_rows": record.removed_rows,
        "cleanup": {
            "completed_at": _rfc3339(record.cleanup_completed_at),
            "steps": list(record.cleanup_steps),
            "command": "python manage.py erasure_cleanup",
        },
        "what_stays": list(WHAT_STAYS),
        "how_to_find": list(HOW_TO_FIND),
        "cannot_erase": list(CANNOT_ERASE),
        "guide": GUIDE,
        "signed_at": _rfc3339(signed_at),
    }


def _sign(record: ErasureRequestRecord) -> None:
    signed_at = timezone.now()
    document = _document(record, signed_at)
    signature, public_key = signing.sign_document(STATEMENT_PURPOSE, canonical_json(document))
    record.statement_document = document
    record.statement_signature = signature
    record.statement_public_key = public_key
    record.statement_signed_at = signed_at


def _queue_cleanup() -> None:
    from audit.tasks import erasure_cleanup  # the task module imports this one

    try:
        erasure_cleanup.delay()
    except Exception:  # the broker is down: the erasure stands, the clean-up waits for the command
        logger.warning("erasure clean-up could not be queued; run manage.py erasure_cleanup")


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
        requested_by_person=record.requested_by_person,
        executed_by_person=record.executed_by_person,
        single_operator=record.single_operator,
        accounts_only=record.accounts_only,
        message_id_hashes=tuple(record.message_id_hashes),
        suppressions=dict(record.suppressions),
        removed_rows=dict(record.removed_rows),
        cleanup_completed_at=record.cleanup_completed_at,
        cleanup_steps=tuple(record.cleanup_steps),
        document=record.statement_document,
        signature=record.statement_signature,
        public_key=record.statement_public_key,
        signed_at=record.statement_signed_at,
    )

"""Legal holds: place and release them, and say which holds cover some mail or an act.

Compliance staff place a hold on accounts, on a person (addresses) or on a case (accounts,
a received range, participants); while it is active, retention keeps the trail entries it
covers, and erasure and the deletion of an account refuse with 58001 naming the hold
(`refuse_if_held`). Addresses are kept only as keyed hashes under the "legal-hold" purpose
key; mail is matched by hashing its sender and participant addresses with every ring key,
so a rotated ring still matches. The hold row is its own record: placed once, released
once with a reason, never deleted (docs/operations/compliance.md, Legal holds).
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from itertools import islice

from django.db import transaction
from django.db.models import QuerySet
from django.utils import timezone

from accounts.models import MailAccount
from audit.erasure_models import ErasureRequestRecord, ErasureStatus
from audit.hold_models import HoldRequesterKind, HoldScope, LegalHold
from audit.services.address_hashes import address_hash, recorded_hashes
from audit.services.arguments import record_id, refused
from audit.services.hold_requests import checked_text, hold_request
from mailbox.models import Email, EmailQuerySet, Participant
from mailbox.services.erasure import MAX_ADDRESSES as ERASURE_MAX_ADDRESSES
from mailbox.services.erasure import erasure_request, matching_emails
from mailfathom.core import signing
from mailfathom.core.errors import Code, MailFathomError

logger = logging.getLogger(__name__)

PURPOSE = "legal-hold"
LEGAL_HOLD = Code.LEGAL_HOLD


@dataclass(frozen=True)
class Requester:
    """Who places or releases a hold: a user name, an API token's name, or an OS user."""

    name: str
    kind: HoldRequesterKind


# --- Placing and releasing ------------------------------------------------------------------


def place_hold(
    *,
    name: str,
    reason: str,
    scope: HoldScope | str,
    requester: Requester,
    account_ids: Iterable[str] = (),
    addresses: Iterable[str] = (),
    received_on_or_after: datetime | None = None,
    received_before: datetime | None = None,
) -> LegalHold:
    """Validate (hold_request) and record a hold; it is active at once, until released.

    The row is the record of the placement: who, when, why. No address is stored, only its
    keyed hash. Raises RuntimeError when the key ring is empty (mailfathom.checks refuses
    such a deployment at startup).
    """
    request = hold_request(
        name=name,
        reason=reason,
        scope=scope,
        account_ids=account_ids,
        addresses=addresses,
        received_on_or_after=received_on_or_after,
        received_before=received_before,
    )
    hashes = recorded_hashes(request.addresses, PURPOSE)
    hold = LegalHold.objects.create(
        name=request.name,
        reason=request.reason,
        scope=request.scope,
        account_ids=list(request.account_ids),
        address_hashes=hashes,
        received_on_or_after=request.received_on_or_after,
        received_before=request.received_before,
        created_by=requester.name[:200],
        created_by_kind=requester.kind,
        created_at=timezone.now(),
    )
    logger.info("legal hold placed: %s (%s scope, %d accounts)", hold.id, hold.scope, len(hold.account_ids))
    return hold


def release_hold(hold_id: uuid.UUID | str, *, reason: str, requester: Requester) -> LegalHold:
    """Release an active hold, with a reason; a hold is released once.

    Refused with 51002 for a blank or over-long reason, and with 51002 naming holdId when no
    active hold has this identifier (never placed, or released already).
    """
    reason = checked_text("reason", reason)
    pk = record_id(hold_id, "holdId", _not_active())
    with transaction.atomic():
        # A conditional UPDATE: of two releases racing, one finds the hold already released.
        released = LegalHold.objects.filter(pk=pk, released_at__isnull=True).update(
            released_at=timezone.now(),
            released_by=requester.name[:200],
            released_by_kind=requester.kind,
            release_reason=reason,
        )
        if not released:
            raise _not_active()
        hold = LegalHold.objects.get(pk=pk)
    logger.info("legal hold released: %s", hold.id)
    return hold


def active_holds() -> list[LegalHold]:
    """Every hold placed and not released, oldest first."""
    return list(LegalHold.objects.active())


# --- What a hold covers ---------------------------------------------------------------------


def holds_covering_emails(emails: EmailQuerySet, holds: Sequence[LegalHold] | None = None) -> list[LegalHold]:
    """The active holds (or of `holds`) that cover at least one email of `emails`."""
    holds = active_holds() if holds is None else holds
    return [hold for hold in holds if covered_emails(hold, emails).exists()]


def covered_emails(hold: LegalHold, emails: EmailQuerySet) -> EmailQuerySet:
    """The emails of `emails` that `hold` covers (whether or not it is active)."""
    rows = emails
    if hold.account_ids:
        rows = rows.filter(account__account_id__in=hold.account_ids)
    elif hold.scope == HoldScope.ACCOUNT:
        return rows.none()
    rows = rows.received_between(hold.received_on_or_after, hold.received_before)
    if hold.address_hashes:
        held = set(hold.address_hashes)
        addresses = [address for address, digests in _digests(_addresses_of(rows)).items() if digests & held]
        if not addresses:
            return rows.none()
        rows = rows.involving(addresses)
    return rows


def covering_account(account: MailAccount, holds: Sequence[LegalHold] | None = None) -> list[LegalHold]:
    """The active holds that deleting `account` (and so all its stored mail) would break.

    An account or case hold naming the account covers it whether or not mail is stored yet;
    any other hold covers it when it covers one of its stored emails.
    """
    holds = active_holds() if holds is None else holds
    named = [hold for hold in holds if account.account_id in hold.account_ids]
    others = [hold for hold in holds if hold not in named]
    return named + holds_covering_emails(Email.objects.filter(account=account), others)


def covering_addresses(
    addresses: Iterable[str],
    account_ids: Iterable[str] = (),
    received_on_or_after: datetime | None = None,
    received_before: datetime | None = None,
    holds: Sequence[LegalHold] | None = None,
) -> list[LegalHold]:
    """The active person and case holds naming one of `addresses`, with accounts and range meeting these.

    `account_ids` empty means every account, as in an erasure request. Addresses compare
    case-insensitively; nothing here looks at stored mail.
    """
    holds = active_holds() if holds is None else holds
    hashed = set().union(*_digests(address.strip().casefold() for address in addresses).values())
    accounts = set(account_ids)
    found = []
    for hold in holds:
        if hold.scope == HoldScope.ACCOUNT or not hashed & set(hold.address_hashes):
            continue
        if accounts and hold.account_ids and not accounts & set(hold.account_ids):
            continue
        if _ranges_meet(hold, received_on_or_after, received_before):
            found.append(hold)
    return found


def held_account_ids(holds: Sequence[LegalHold]) -> set[str]:
    """The identifiers of accounts an account hold among `holds` names (all their mail held)."""
    return {account for hold in holds if hold.scope == HoldScope.ACCOUNT for account in hold.account_ids}


def refuse_if_held(holds: Sequence[LegalHold], what: str) -> None:
    """Raise 58001 naming the first of `holds` (its name and id) when there is any."""
    if not holds:
        return
    first = holds[0]
    named = f"'{first.name}' ({first.id})"
    if len(holds) > 1:
        named += f" and {len(holds) - 1} other hold{'s' if len(holds) > 2 else ''}"
    raise MailFathomError(LEGAL_HOLD, LEGAL_HOLD.message(hold=named, what=what))


# --- Deletion -------------------------------------------------------------------------------


def refuse_held_account_deletion(account: MailAccount) -> None:
    """Refuse with 58001 to delete `account` (and so its stored mail and trail) while a hold covers it."""
    refuse_if_held(covering_account(account), f"account {account.account_id} or some of its stored mail")


# --- Erasure --------------------------------------------------------------------------------


def holds_refusing_erasure(
    addresses: Iterable[str],
    account_ids: Iterable[str] = (),
    received_on_or_after: datetime | None = None,
    received_before: datetime | None = None,
) -> list[LegalHold]:
    """The active holds an erasure of these addresses (within these bounds) would break.

    A person or case hold naming one of the addresses, whether or not mail is stored; and
    any hold covering one of the emails the erasure would remove. Validation is erasure's
    (51002, mailbox.services.erasure.erasure_request).
    """
    holds = active_holds()
    if not holds:
        return []
    request = erasure_request(
        addresses,
        account_ids=account_ids,
        received_on_or_after=received_on_or_after,
        received_before=received_before,
    )
    named = covering_addresses(
        request.addresses, request.account_ids, request.received_on_or_after, request.received_before, holds
    )
    others = [hold for hold in holds if hold not in named]
    return named + holds_covering_emails(matching_emails(request), others)


def refuse_held_erasure(request_id: uuid.UUID, addresses: Iterable[str]) -> Iterable[str]:
    """Refuse with 58001 to execute an erasure request a hold covers; else hand the addresses back.

    Called first by audit.services.erasure.execute_erasure_request, before anything is
    removed. The addresses are read once here (at most one past erasure's bound, so its own
    refusal still applies) and returned for the execution to use. A request that is not
    held, or addresses erasure refuses, are left for the execution to refuse in its terms.
    """
    if isinstance(addresses, str | bytes) or not hasattr(addresses, "__iter__"):
        return addresses  # erasure refuses what is not a list in its own terms
    supplied = list(islice(iter(addresses), ERASURE_MAX_ADDRESSES + 1))
    record = ErasureRequestRecord.objects.filter(pk=request_id).first()
    if record is None or record.status != ErasureStatus.PREVIEWED or not LegalHold.objects.active().exists():
        return supplied
    try:
        holds = holds_refusing_erasure(
            supplied, record.account_ids, record.received_on_or_after, record.received_before
        )
    except MailFathomError:
        return supplied
    refuse_if_held(holds, "mail this erasure would remove")
    return supplied


# --- Helpers --------------------------------------------------------------------------------


def _digests(addresses: Iterable[str]) -> dict[str, set[str]]:
    """Each address with its hashes under every ring key (a hold placed before a rotation still matches)."""
    keys = signing.derived_keys(PURPOSE)
    return {address: {address_hash(address, key) for key in keys} for address in set(addresses)}


def _addresses_of(emails: QuerySet[Email]) -> set[str]:
    """The case-folded sender and participant addresses of `emails`, each once."""
    senders = emails.exclude(sender_address="").values_list("sender_address", flat=True).distinct()
    others = (
        Participant.objects.filter(email__in=emails.values("pk")).values_list("address", flat=True).distinct()
    )
    return {address.strip().casefold() for address in (*senders, *others) if address.strip()}


def _ranges_meet(hold: LegalHold, start: datetime | None, end: datetime | None) -> bool:
    """Whether [start, end) and the hold's received range share an instant (None: unbounded)."""
    if hold.received_before is not None and start is not None and start >= hold.received_before:
        return False
    if hold.received_on_or_after is not None and end is not None and end <= hold.received_on_or_after:
        return False
    return True


def _not_active() -> MailFathomError:
    return refused("holdId", "The holdId argument must name an active legal hold.")

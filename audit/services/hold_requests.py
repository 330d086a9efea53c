"""A legal hold as compliance staff ask for it, validated before it is placed.

Bounds are counted before the values are looked at; a refusal is 51002 naming the argument
and its limit, never the value. The addresses live only in the returned request, in memory:
audit.services.holds keeps their keyed hashes (docs/operations/compliance.md, Legal holds).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from audit.hold_models import HoldScope
from audit.services import arguments
from audit.services.arguments import MAX_ACCOUNTS, MAX_ADDRESSES, refused
from mailfathom.core import text

MAX_ACCOUNT_ID_LENGTH = 64
MAX_NAME_LENGTH = 200
MAX_REASON_LENGTH = 2000


@dataclass(frozen=True)
class HoldRequest:
    """A validated hold, before it is placed: case-folded addresses live only here, in memory."""

    name: str
    reason: str
    scope: HoldScope
    account_ids: tuple[str, ...] = ()
    addresses: tuple[str, ...] = ()
    received_on_or_after: datetime | None = None
    received_before: datetime | None = None


def hold_request(
    *,
    name: str,
    reason: str,
    scope: HoldScope | str,
    account_ids: Iterable[str] = (),
    addresses: Iterable[str] = (),
    received_on_or_after: datetime | None = None,
    received_before: datetime | None = None,
) -> HoldRequest:
    """Validate a hold; refuse with 51002 naming the argument, never its value.

    An account hold names 1 to 64 accounts and nothing else; a person hold 1 to 100
    addresses and nothing else; a case any of accounts, a received range and participants,
    at least one of them.
    """
    chosen = _scope(scope)
    accounts = arguments.account_ids(account_ids, longest=MAX_ACCOUNT_ID_LENGTH)
    arguments.refuse_unknown_accounts(accounts)
    folded = arguments.addresses(addresses)
    arguments.received_range(received_on_or_after, received_before)
    has_range = received_on_or_after is not None or received_before is not None
    if chosen == HoldScope.ACCOUNT and (not accounts or folded or has_range):
        raise refused(
            "accountIds",
            f"The accountIds argument must name 1 to {MAX_ACCOUNTS} accounts, "
            "and nothing else, for an account hold.",
        )
    if chosen == HoldScope.PERSON and (not folded or accounts or has_range):
        raise refused(
            "addresses",
            f"The addresses argument must list 1 to {MAX_ADDRESSES} addresses, "
            "and nothing else, for a person hold.",
        )
    if chosen == HoldScope.CASE and not (accounts or folded or has_range):
        raise refused("accountIds", "A case hold must name accounts, a received range or participants.")
    return HoldRequest(
        name=_line("name", name, MAX_NAME_LENGTH),
        reason=checked_text("reason", reason),
        scope=chosen,
        account_ids=tuple(sorted(accounts)),
        addresses=tuple(folded),
        received_on_or_after=received_on_or_after,
        received_before=received_before,
    )


def _scope(value: HoldScope | str) -> HoldScope:
    try:
        return HoldScope(value)
    except ValueError as error:
        raise refused("scope", "The scope argument must be one of account, person or case.") from error


def _line(argument: str, value: object, limit: int) -> str:
    if (
        not isinstance(value, str)
        or not value.strip()
        or len(value) > limit
        or text.has_control_character(value)
    ):
        raise refused(argument, f"The {argument} argument must be 1 to {limit} characters on one line.")
    return value.strip()


def checked_text(argument: str, value: object) -> str:
    """A reason's text, stripped: 1 to 2,000 characters (line breaks allowed), else 51002."""
    if not isinstance(value, str) or not value.strip() or len(value) > MAX_REASON_LENGTH:
        raise refused(argument, f"The {argument} argument must be 1 to {MAX_REASON_LENGTH} characters.")
    return value.strip()

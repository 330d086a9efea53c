"""A legal hold as compliance staff ask for it, validated before it is placed.

Bounds are counted before the values are looked at; a refusal is 51002 naming the argument
and its limit, never the value. The addresses live only in the returned request, in memory:
audit.services.holds keeps their keyed hashes (docs/operations/compliance.md, Legal holds).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from itertools import islice

from accounts.models import MailAccount
from audit.hold_models import HoldScope
from mailfathom.core import text
from mailfathom.core.errors import FILTER_REFUSED, MailFathomError

MAX_ADDRESSES = 100
MAX_ADDRESS_LENGTH = 320
MAX_ACCOUNTS = 64
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
    accounts = _accounts(account_ids)
    folded = _addresses(addresses)
    _range(received_on_or_after, received_before)
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


def _bounded(values: Iterable[object], limit: int, argument: str) -> list[object]:
    if isinstance(values, str | bytes):
        raise refused(argument, f"The {argument} argument must be a list of at most {limit} entries.")
    items: list[object] = list(islice(iter(values), limit + 1))  # counted before an element is looked at
    if len(items) > limit:
        raise refused(argument, f"The {argument} argument must hold at most {limit} entries.")
    return items


def _accounts(values: Iterable[str]) -> list[str]:
    accounts: list[str] = []
    for value in _bounded(values, MAX_ACCOUNTS, "accountIds"):
        if not isinstance(value, str) or not value.strip() or len(value) > 64:
            raise refused(
                "accountIds",
                "Each entry of the accountIds argument must be an account identifier of 1 to 64 characters.",
            )
        if value.strip() not in accounts:
            accounts.append(value.strip())
    if accounts:
        known = set(MailAccount.objects.filter(account_id__in=accounts).values_list("account_id", flat=True))
        if known != set(accounts):
            raise refused(
                "accountIds", "The accountIds argument names an account this deployment does not hold."
            )
    return accounts


def _addresses(values: Iterable[str]) -> list[str]:
    folded: list[str] = []
    for value in _bounded(values, MAX_ADDRESSES, "addresses"):
        stripped = value.strip() if isinstance(value, str) else ""
        local, _, domain = stripped.rpartition("@")
        if (
            not local
            or not domain
            or len(stripped) > MAX_ADDRESS_LENGTH
            or any(ch.isspace() for ch in stripped)
        ):
            raise refused(
                "addresses",
                "Each entry of the addresses argument must be one whole email address of at most "
                f"{MAX_ADDRESS_LENGTH} characters.",
            )
        if stripped.casefold() not in folded:
            folded.append(stripped.casefold())
    return folded


def _range(start: datetime | None, end: datetime | None) -> None:
    for argument, moment in (("receivedOnOrAfter", start), ("receivedBefore", end)):
        if moment is not None and (not isinstance(moment, datetime) or moment.tzinfo is None):
            raise refused(argument, f"The {argument} argument must be a date and time with a time zone.")
    if start is not None and end is not None and end <= start:
        raise refused("receivedBefore", "The receivedBefore argument must come after receivedOnOrAfter.")


def refused(argument: str, sentence: str) -> MailFathomError:
    """A 51002 refusal naming `argument`."""
    return MailFathomError(FILTER_REFUSED, sentence, argument=argument)

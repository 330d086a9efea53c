"""The argument checks the audit app's use cases share: record ids, lists, addresses, accounts, a range.

Bounds are counted before the values are looked at; a refusal is 51002 naming the argument
and its limit, never the value.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from datetime import datetime
from itertools import islice

from accounts.models import MailAccount
from mailfathom.core.errors import FILTER_REFUSED, MailFathomError
from mailfathom.core.identifiers import issued_uuid
from mailfathom.core.text import MAX_ADDRESS_LENGTH, is_whole_address

MAX_ADDRESSES = 100
MAX_ACCOUNTS = 64


def refused(argument: str, sentence: str) -> MailFathomError:
    """A 51002 refusal naming `argument`."""
    return MailFathomError(FILTER_REFUSED, sentence, argument=argument)


def record_id(value: uuid.UUID | str, argument: str, unknown: MailFathomError) -> uuid.UUID:
    """`value` as the id of a record; `unknown` (the caller's "no such record") when it is no UUID."""
    if isinstance(value, uuid.UUID):
        return value
    try:
        return issued_uuid(value, f"The {argument} argument", argument=argument)
    except MailFathomError as error:
        raise unknown from error


def bounded(values: Iterable[object], limit: int, argument: str) -> list[object]:
    """`values` as a list of at most `limit` entries; at most one past the bound is read."""
    if isinstance(values, str | bytes) or not hasattr(values, "__iter__"):
        raise refused(argument, f"The {argument} argument must be a list of at most {limit} entries.")
    items = list(islice(iter(values), limit + 1))
    if len(items) > limit:
        raise refused(argument, f"The {argument} argument must hold at most {limit} entries.")
    return items


def addresses(values: Iterable[object]) -> list[str]:
    """Whole email addresses, case-folded, each once, in the order given."""
    folded: list[str] = []
    for value in bounded(values, MAX_ADDRESSES, "addresses"):
        text = value.strip() if isinstance(value, str) else ""
        if not is_whole_address(text):
            raise refused(
                "addresses",
                "Each entry of the addresses argument must be one whole email address of at most "
                f"{MAX_ADDRESS_LENGTH} characters.",
            )
        if text.casefold() not in folded:
            folded.append(text.casefold())
    return folded


def account_ids(values: Iterable[object], *, longest: int) -> list[str]:
    """Account identifiers of 1 to `longest` characters, stripped, each once, in the order given.

    Whether the deployment holds them is `refuse_unknown_accounts`, checked where the caller
    wants that refusal to come.
    """
    accounts: list[str] = []
    for value in bounded(values, MAX_ACCOUNTS, "accountIds"):
        if not isinstance(value, str) or not value.strip() or len(value.strip()) > longest:
            raise refused(
                "accountIds",
                f"Each entry of the accountIds argument must be an account identifier of 1 to {longest} "
                "characters.",
            )
        if value.strip() not in accounts:
            accounts.append(value.strip())
    return accounts


def refuse_unknown_accounts(accounts: list[str]) -> None:
    """Refuse unless every one of `accounts` is an account this deployment holds."""
    if not accounts:
        return
    known = set(MailAccount.objects.filter(account_id__in=accounts).values_list("account_id", flat=True))
    if known != set(accounts):
        raise refused("accountIds", "The accountIds argument names an account this deployment does not hold.")


def received_range(start: datetime | None, end: datetime | None) -> None:
    """Refuse a bound without a time zone, or an end not after the start."""
    for argument, moment in (("receivedOnOrAfter", start), ("receivedBefore", end)):
        if moment is not None and (not isinstance(moment, datetime) or moment.tzinfo is None):
            raise refused(argument, f"The {argument} argument must be a date and time with a time zone.")
    if start is not None and end is not None and end <= start:
        raise refused("receivedBefore", "The receivedBefore argument must come after receivedOnOrAfter.")

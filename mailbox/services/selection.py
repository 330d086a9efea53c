"""The selection every read of the local copy is expressed in: a resolved scope plus a filter.

list_emails, search_emails and ask_mail's lookups take a MailFilter (declared once in
mailbox.services.mail_filter), check it here, resolve the caller's accounts and folders
through accounts.services.scope, and narrow emails with Email.objects.in_selection(). A
filter is checked here once, for every entrypoint, whoever built it.

`parse_filter` is the one parser from protocol values: the MCP tools and search_mail both
read through the declaration's field readers, and every path runs `validate_filter`.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, replace
from datetime import datetime
from typing import Any

from accounts.models import FolderRole
from accounts.services.scope import ResolvedScope, resolve_scope
from mailbox.services.mail_filter import (
    FIELDS,
    MAX_SUBJECT_FRAGMENT,
    WIRE_NAMES,
    FilterField,
    MailFilter,
    read_filter,
)
from mailfathom.core.errors import FILTER_REFUSED, MailFathomError
from mailfathom.core.text import has_control_character as _has_control_character
from mailfathom.core.text import is_whole_address


@dataclass(frozen=True)
class Selection:
    scope: ResolvedScope
    filter: MailFilter

    @property
    def folder_mapping_ids(self) -> tuple[int, ...]:
        """The folders this selection reads: the scope's, less junk unless it was asked for."""
        return tuple(
            folder.mapping_id
            for account in self.scope.accounts
            for folder in account.folders
            if self.filter.include_junk or folder.role != FolderRole.JUNK
        )

    def fingerprint(self) -> str:
        """A digest of what this selection reads, the same for every spelling of it."""
        data = asdict(self.filter)
        for key, value in data.items():
            if isinstance(value, datetime):
                data[key] = value.isoformat()
        data["accounts"] = sorted(account.account_pk for account in self.scope.accounts)
        data["folders"] = sorted(self.folder_mapping_ids)
        canonical = json.dumps(data, sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(canonical.encode()).hexdigest()


def _address(value: str | None, argument: str) -> str | None:
    if value is None:
        return None
    text = value.strip()
    if not is_whole_address(text):
        raise _not_an_address(argument)
    return text.casefold()


def _not_an_address(argument: str) -> MailFathomError:
    return MailFathomError(
        FILTER_REFUSED, f"The {argument} filter must be one whole email address.", argument=argument
    )


def validate_filter(mail_filter: MailFilter) -> MailFilter:
    """Check every filter value; refuse with 51002 naming the filter, never its value.

    Returns the filter every read narrows with: addresses trimmed and case-folded, a blank
    subject fragment dropped. Checking a checked filter again returns it unchanged.
    """
    subject_fragment = mail_filter.subject_fragment
    if subject_fragment is not None:
        subject = WIRE_NAMES["subject_fragment"]
        if len(subject_fragment) > MAX_SUBJECT_FRAGMENT:
            raise MailFathomError(
                FILTER_REFUSED,
                f"The {subject} filter may be at most {MAX_SUBJECT_FRAGMENT} characters.",
                argument=subject,
            )
        if _has_control_character(subject_fragment):
            raise MailFathomError(
                FILTER_REFUSED,
                f"The {subject} filter may not contain control characters.",
                argument=subject,
            )
        if not subject_fragment.strip():
            subject_fragment = None
    start, end = mail_filter.received_on_or_after, mail_filter.received_before
    for name, moment in (("received_on_or_after", start), ("received_before", end)):
        if moment is not None and moment.tzinfo is None:
            wire = WIRE_NAMES[name]
            raise MailFathomError(FILTER_REFUSED, f"The {wire} filter must carry a time zone.", argument=wire)
    if start and end and end < start:
        wire = WIRE_NAMES["received_before"]
        raise MailFathomError(FILTER_REFUSED, "The received range ends before it starts.", argument=wire)
    # replace() keeps the filter's own class, so a filter declared beyond these survives.
    return replace(
        mail_filter,
        sender_address=_address(mail_filter.sender_address, WIRE_NAMES["sender_address"]),
        recipient_address=_address(mail_filter.recipient_address, WIRE_NAMES["recipient_address"]),
        subject_fragment=subject_fragment,
        include_junk=bool(mail_filter.include_junk),
    )


def parse_filter(
    values: Mapping[str, Any],
    fields: Iterable[FilterField] = FIELDS,
    declaration: type[MailFilter] = MailFilter,
) -> MailFilter:
    """Protocol values (wire name -> JSON value) -> a checked MailFilter, or 51002 naming one.

    The JSON type of each of `fields`, a timestamp's length before it is parsed, ISO 8601
    with a time zone (mail_filter.read_filter); then every rule of validate_filter.
    """
    return validate_filter(read_filter(values, fields, declaration))


def select(
    accounts: Iterable[str] | None = None,
    folders: Iterable[str] | None = None,
    mail_filter: MailFilter | None = None,
) -> Selection:
    """Check the filter, then resolve the caller's scope (51002, then 53001/53003)."""
    checked = validate_filter(mail_filter if mail_filter is not None else MailFilter())
    return Selection(scope=resolve_scope(accounts, folders), filter=checked)

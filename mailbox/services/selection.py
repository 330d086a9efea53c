"""The selection every read of the local copy is expressed in: a resolved scope plus filters.

list_emails and search_emails (and ask_mail's lookups) validate their filters here, resolve
the caller's accounts and folders through accounts.services.scope, and narrow emails with
Email.objects.in_selection(). A filter is checked here once, for every entrypoint.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from datetime import datetime

from accounts.models import FolderRole
from accounts.services.scope import ResolvedScope, resolve_scope
from mailfathom.errors import FILTER_REFUSED, MailFathomError
from mailfathom.text import has_control_character as _has_control_character

MAX_SUBJECT_FRAGMENT = 256
MAX_ADDRESS_LENGTH = 320


@dataclass(frozen=True)
class MailFilter:
    sender_address: str | None = None
    recipient_address: str | None = None
    subject_fragment: str | None = None
    received_on_or_after: datetime | None = None
    received_before: datetime | None = None
    is_remotely_seen: bool | None = None
    has_attachments: bool | None = None
    include_junk: bool = False


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
    local, _, domain = text.rpartition("@")
    if (
        not local
        or not domain
        or len(text) > MAX_ADDRESS_LENGTH
        or _has_control_character(text)
        or any(ch.isspace() for ch in text)
    ):
        raise MailFathomError(
            FILTER_REFUSED, f"The {argument} filter must be one whole email address.", argument=argument
        )
    return text.casefold()


def validate_filter(
    *,
    sender_address: str | None = None,
    recipient_address: str | None = None,
    subject_fragment: str | None = None,
    received_on_or_after: datetime | None = None,
    received_before: datetime | None = None,
    is_remotely_seen: bool | None = None,
    has_attachments: bool | None = None,
    include_junk: bool = False,
) -> MailFilter:
    """Check every filter value; refuse with 51002 naming the filter, never its value."""
    if subject_fragment is not None:
        if len(subject_fragment) > MAX_SUBJECT_FRAGMENT:
            raise MailFathomError(
                FILTER_REFUSED,
                f"The subjectFragment filter may be at most {MAX_SUBJECT_FRAGMENT} characters.",
                argument="subjectFragment",
            )
        if _has_control_character(subject_fragment):
            raise MailFathomError(
                FILTER_REFUSED,
                "The subjectFragment filter may not contain control characters.",
                argument="subjectFragment",
            )
        if not subject_fragment.strip():
            subject_fragment = None
    for name, moment in (("receivedOnOrAfter", received_on_or_after), ("receivedBefore", received_before)):
        if moment is not None and moment.tzinfo is None:
            raise MailFathomError(FILTER_REFUSED, f"The {name} filter must carry a time zone.", argument=name)
    if received_on_or_after and received_before and received_before < received_on_or_after:
        raise MailFathomError(
            FILTER_REFUSED, "The received range ends before it starts.", argument="receivedBefore"
        )
    return MailFilter(
        sender_address=_address(sender_address, "senderAddress"),
        recipient_address=_address(recipient_address, "recipientAddress"),
        subject_fragment=subject_fragment,
        received_on_or_after=received_on_or_after,
        received_before=received_before,
        is_remotely_seen=is_remotely_seen,
        has_attachments=has_attachments,
        include_junk=bool(include_junk),
    )


def select(
    accounts: Iterable[str] | None = None, folders: Iterable[str] | None = None, **filters
) -> Selection:
    """Validate filters, then resolve the caller's scope (51002, then 53001/53003)."""
    mail_filter = validate_filter(**filters)
    return Selection(scope=resolve_scope(accounts, folders), filter=mail_filter)

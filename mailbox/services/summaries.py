"""The summary projection a listing or a search publishes for each email.

A summary lets a reader recognize a message without reading it: no body text, no raw MIME,
no Cc or Reply-To, and no recipient display names (To addresses only). The attachment
group keeps attachments and inline resources apart, and leaves every count empty when
nothing has read the message's parts. Enumerations are this module's own wire spellings,
mapped explicitly from the domain values, so a rename inside the domain fails here instead
of silently changing what callers read.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from datetime import datetime
from typing import Any, Literal

from django.contrib.postgres.expressions import ArraySubquery
from django.db.models import F, OuterRef

from accounts.models import MailAccount
from mailbox.models import Availability, Email, EmailQuerySet, Folder, Participant, ParticipantRole
from mailfathom.core.wire import WireModel

ContentAvailability = Literal[
    "available", "exceededSizeLimit", "awaitingStorageHeadroom", "encryptedNotReadableLocally"
]

_AVAILABILITY: dict[str, ContentAvailability] = {
    Availability.AVAILABLE: "available",
    Availability.EXCEEDED_SIZE_LIMIT: "exceededSizeLimit",
    Availability.AWAITING_STORAGE_HEADROOM: "awaitingStorageHeadroom",
    Availability.ENCRYPTED: "encryptedNotReadableLocally",
}


class AttachmentSummary(WireModel):
    """Counts are None when nothing read the email's parts (its content was kept out)."""

    attachment_count: int | None
    inline_resource_count: int | None
    total_size_bytes: int | None
    encrypted: bool
    unverified_signature: bool
    unexpanded_tnef: bool


class RemoteFlags(WireModel):
    """The remote flags, and whether anyone observed them: no flags is not the same as unknown.

    Summaries and content reads both publish this one model.
    """

    flags: list[str]
    was_observed: bool
    observed_at: datetime | None

    @classmethod
    def of(cls, email: Email) -> RemoteFlags:
        """The flags synchronization last read for `email`, as it stored them."""
        return cls(
            flags=list(email.flags), was_observed=email.flags_observed, observed_at=email.flags_observed_at
        )


class EmailSummary(WireModel):
    stored_email_id: str
    account_id: str
    account_display_name: str
    folder_alias: str
    message_id: str
    subject: str
    sender_address: str
    sender_display_name: str
    to_addresses: list[str]
    sent_at: datetime | None
    received_at: datetime
    size_bytes: int
    attachments: AttachmentSummary
    remote_flags: RemoteFlags
    content_availability: ContentAvailability


def with_summary_columns(rows: EmailQuerySet) -> EmailQuerySet:
    """`rows` reading, in their own statement, what a summary needs beyond the email's columns.

    Meant for a short list of rows chosen by id (a search's window): summarize then reads
    nothing more, where it would otherwise ask three more statements.
    """
    to = (
        Participant.objects.filter(email=OuterRef("pk"), role=ParticipantRole.TO)
        .order_by("position")
        .values("address")
    )
    return rows.annotate(
        summary_account_id=F("account__account_id"),
        summary_account_name=F("account__display_name"),
        summary_folder_alias=F("folder__mapping__alias"),
        summary_to=ArraySubquery(to),
    )


def summarize(emails: list[Email]) -> list[EmailSummary]:
    """Project `emails` into summaries, in the order given, with a fixed number of queries.

    Accounts, folder aliases and To addresses are loaded in one query each whatever the
    length of the list, so the caller need not prefetch anything (and any relation it did
    load is not relied on); rows read with_summary_columns need none.
    """
    if not emails:
        return []
    if all(hasattr(email, "summary_to") for email in emails):
        return [_annotated_summary(email) for email in emails]
    accounts = {
        row["pk"]: row
        for row in MailAccount.objects.filter(pk__in={e.account_id for e in emails}).values(
            "pk", "account_id", "display_name"
        )
    }
    aliases = dict(
        Folder.objects.filter(pk__in={e.folder_id for e in emails}).values_list("pk", "mapping__alias")
    )
    to_addresses: dict[object, list[str]] = defaultdict(list)
    for email_id, address in (
        Participant.objects.filter(email_id__in=[e.pk for e in emails], role=ParticipantRole.TO)
        .order_by("email_id", "position")
        .values_list("email_id", "address")
    ):
        if address:
            to_addresses[email_id].append(address)
    return [_summary(email, accounts[email.account_id], aliases, to_addresses) for email in emails]


def _annotated_summary(email: Any) -> EmailSummary:
    account = {"account_id": email.summary_account_id, "display_name": email.summary_account_name}
    to_addresses = {email.pk: [address for address in email.summary_to if address]}
    return _summary(email, account, {email.folder_id: email.summary_folder_alias}, to_addresses)


def _summary(
    email: Email,
    account: Mapping[str, Any],
    aliases: Mapping[int, str | None],
    to_addresses: dict[object, list[str]],
) -> EmailSummary:
    parts_read = email.attachment_count is not None
    return EmailSummary(
        stored_email_id=str(email.pk),
        account_id=account["account_id"],
        account_display_name=account["display_name"],
        # A folder outside every mapping is outside every selection; "" only guards a caller
        # that summarizes rows it did not select.
        folder_alias=aliases.get(email.folder_id) or "",
        message_id=email.message_id,
        subject=email.subject,
        sender_address=email.sender_address,
        sender_display_name=email.sender_name,
        to_addresses=to_addresses.get(email.pk, []),
        sent_at=email.sent_at,
        received_at=email.received_at,
        size_bytes=email.size_bytes,
        attachments=AttachmentSummary(
            attachment_count=email.attachment_count,
            inline_resource_count=email.inline_count if parts_read else None,
            total_size_bytes=email.attachment_total_bytes if parts_read else None,
            encrypted=email.encrypted,
            unverified_signature=email.unverified_signature,
            unexpanded_tnef=email.unexpanded_tnef,
        ),
        remote_flags=RemoteFlags.of(email),
        content_availability=_AVAILABILITY[email.availability],
    )

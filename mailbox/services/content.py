"""Content reads: get_email_content, and opening the attachment a download link names.

A read names 1 to 10 stored ids and gets one entry each, in order: the content, or 53002 (not
held or out of scope) or 55001 (stored copy damaged, with a RepairRequest for the next sync).
Only the local copy is read, never IMAP. The junk folder is in scope: a caller holding an
id has already been shown that email, so reading it reveals nothing new.
"""

from __future__ import annotations

import hashlib
import uuid
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from itertools import islice
from typing import Any, TypedDict

from django.conf import settings
from pydantic import Field

from accounts.services.scope import resolve_scope
from mailbox.models import AttachmentText, Availability, Email, Participant, RawMessage, RepairRequest
from mailbox.parsing import AttachmentInfo, ParseLimits, attachment_bytes, parse_message, sanitized_html
from mailbox.services import attachment_links, sensitive
from mailbox.services.summaries import RemoteFlags
from mailfathom.core.errors import CONTENT_UNAVAILABLE, UNKNOWN_EMAIL, Code, MailFathomError
from mailfathom.core.identifiers import issued_uuid
from mailfathom.core.identifiers import uuid_from_text as _uuid_from_text
from mailfathom.core.wire import WireModel

MAX_EMAILS = 10
SCANNED_DISPLAY_NAMES = 40
EMAIL_COUNT_REFUSED = Code.EMAIL_COUNT_REFUSED
EMAIL_REPEATED = Code.EMAIL_REPEATED

_NOT_HELD = "The local mailbox copy holds no email this deployment serves under that identifier."
_DAMAGED = "The stored content of this email is missing or damaged; it is being repaired, try again later."
# Availability values whose raw MIME is stored and must be read.
_RAW_STORED = {Availability.AVAILABLE, Availability.ENCRYPTED}
_MARKER_START = "[redacted:"


# --- Result: the published shape (camelCase on the wire) ---------------------------------


class TruncatedBy(StrEnum):
    NONE = "none"
    BODY_LIMIT = "bodyCharacterLimit"
    READ_BUDGET = "readCharacterBudget"
    SCAN_CEILING = "sensitiveContentScanCeiling"


class BodyAvailability(StrEnum):
    READABLE = "readable"
    ENCRYPTED = "encryptedNotReadableLocally"
    EXCEEDED_SIZE_LIMIT = "notStoredExceededSizeLimit"
    AWAITING_HEADROOM = "notStoredAwaitingStorageHeadroom"


class DownloadState(StrEnum):
    NOT_REQUESTED = "notRequested"
    ISSUED = "issued"
    UNAVAILABLE = "unavailable"


class Mailbox(WireModel):
    address: str
    display_name: str | None  # none written, or (scanning on) past the fortieth name


class Headers(WireModel):
    message_id: str | None
    subject: str
    from_: Mailbox | None = Field(alias="from")
    to: list[Mailbox]
    cc: list[Mailbox]
    bcc: list[Mailbox]
    reply_to: list[Mailbox]
    sent_at: datetime | None
    received_at: datetime
    in_reply_to: str | None
    references: list[str]


class Representation(WireModel):
    text: str
    original_character_count: int
    truncated_by: TruncatedBy


class Body(WireModel):
    availability: BodyAvailability
    plain_text: Representation
    sanitized_html: Representation | None  # not asked for, or the message has no HTML


class TextState(StrEnum):
    """What extraction made of an attachment, as get_email_content reports it."""

    NOT_REQUESTED = "notRequested"
    PENDING = "pending"  # the attachment text pass has not read it yet
    EXTRACTED = "extracted"
    TOO_LARGE = "tooLarge"
    ENCRYPTED = "encrypted"
    UNREADABLE = "unreadable"
    TIMED_OUT = "timedOut"
    UNSUPPORTED = "unsupported"  # not a kind that is read, or switched off


_TEXT_STATES = {
    "ok": TextState.EXTRACTED,
    "too_large": TextState.TOO_LARGE,
    "encrypted": TextState.ENCRYPTED,
    "unreadable": TextState.UNREADABLE,
    "timed_out": TextState.TIMED_OUT,
    "unsupported": TextState.UNSUPPORTED,
}


class Attachment(WireModel):
    file_name: str | None  # None: the part carried no usable name
    media_type: str
    size_bytes: int
    was_file_name_normalized: bool
    download_state: DownloadState
    download_url: str | None = None
    download_expires_at: datetime | None = None
    text_state: TextState = TextState.NOT_REQUESTED
    # The text read from the file, under the same bounds as the body; only when asked for.
    extracted_text: Representation | None = None


class AttachmentCounts(WireModel):
    attachment_count: int
    inline_resource_count: int
    total_size_bytes: int
    encrypted: bool
    unverified_signature: bool
    unexpanded_tnef: bool


class EmailContent(WireModel):
    account_id: str
    folder_alias: str
    size_bytes: int
    headers: Headers
    body: Body
    attachments: list[Attachment]
    attachment_counts: AttachmentCounts | None  # None: nothing has ever read the parts
    remote_flags: RemoteFlags


class Failure(WireModel):
    code: int
    message: str


class EmailEntry(WireModel):
    stored_email_id: uuid.UUID
    content: EmailContent | None
    failure: Failure | None


class ContentResult(WireModel):
    emails: list[EmailEntry]


_AVAILABILITY: dict[str, BodyAvailability] = {
    Availability.AVAILABLE: BodyAvailability.READABLE,
    Availability.ENCRYPTED: BodyAvailability.ENCRYPTED,
    Availability.EXCEEDED_SIZE_LIMIT: BodyAvailability.EXCEEDED_SIZE_LIMIT,
    Availability.AWAITING_STORAGE_HEADROOM: BodyAvailability.AWAITING_HEADROOM,
}


def get_email_content(
    stored_email_ids: Any,
    include_html: bool = False,
    include_attachment_download_links: bool = False,
    include_attachment_text: bool = False,
) -> ContentResult:
    """Return one entry per named email, in order, under the per-email and per-call bounds.

    Refusals end the call: 51005 for no ids or more than 10 (counted before any id is
    parsed), 51004 for an id that is not a string of at most 64 characters spelling a UUID
    other than the all-zero one, 51006 for an id named twice in any spelling. An email
    that is not held, not in a served account, or not in a folder tools may read is one
    entry's 53002. A sensitive-content detector that fails ends the call with 82001.
    `include_attachment_text` adds the text read from each attachment, spending the same
    per-email limit and per-call budget as the bodies, after them.
    """
    ids = _parsed_ids(stored_email_ids)
    scope = resolve_scope()
    # Junk included: an email named by id is read wherever tools may see it.
    rows = Email.objects.readable(scope).filter(pk__in=ids).select_related("account", "folder__mapping")
    found = {email.pk: email for email in rows}
    participants = _participants(list(found))
    texts = _attachment_texts(list(found)) if include_attachment_text else None
    limits = parse_limits()
    budget = _Budget(
        per_email=int(settings.MAILFATHOM.content_body_character_limit),
        remaining=int(settings.MAILFATHOM.content_read_character_budget),
    )
    scanning = sensitive.enabled()
    entries = []
    for email_id in ids:
        email = found.get(email_id)
        if email is None:
            entries.append(_failed(email_id, UNKNOWN_EMAIL, _NOT_HELD))
            continue
        raw = stored_raw(email) if email.availability in _RAW_STORED else None
        if email.availability in _RAW_STORED and raw is None:
            entries.append(_failed(email_id, CONTENT_UNAVAILABLE, _DAMAGED))
            continue
        content = _content(
            email,
            participants.get(email.pk, []),
            raw,
            limits,
            budget,
            scanning=scanning,
            include_html=include_html,
            include_links=include_attachment_download_links,
            texts=None if texts is None else texts.get(email.pk, {}),
        )
        entries.append(EmailEntry(stored_email_id=email_id, content=content, failure=None))
    return ContentResult(emails=entries)


def parse_limits() -> ParseLimits:
    """The limits every content read and download parses with, so part indices agree.

    The text bound is never below the per-email limit, so the parser never cuts a body
    the limit would have served whole.
    """
    default = ParseLimits()
    body_limit = int(settings.MAILFATHOM.content_body_character_limit)
    return ParseLimits(max_text_chars=max(default.max_text_chars, body_limit))


@dataclass(frozen=True)
class StoredRaw:
    data: bytes
    sha256: str


def stored_raw(email: Email) -> StoredRaw | None:
    """Return the email's verified raw MIME, or None (and a repair request) when unusable.

    Decompression is bounded by the recorded original size, so a damaged row cannot make
    a read inflate without limit.
    """
    return stored_raws([email])[email.pk]


def stored_raws(emails: Sequence[Email]) -> dict[uuid.UUID, StoredRaw | None]:
    """stored_raw for several emails in one query: each one's verified raw MIME, or None.

    Every row is held in memory at once: the caller bounds how many (and how large) it asks for.
    """
    rows = {row.email_id: row for row in RawMessage.objects.filter(email_id__in=[e.pk for e in emails])}
    found: dict[uuid.UUID, StoredRaw | None] = {}
    for email in emails:
        row = rows.get(email.pk)
        data = _verified(row) if row is not None else None
        if data is None or row is None:
            RepairRequest.objects.get_or_create(email=email)
            found[email.pk] = None
        else:
            found[email.pk] = StoredRaw(data=data, sha256=row.sha256)
    return found


def _verified(row: RawMessage) -> bytes | None:
    """The row's bytes when they inflate to the recorded size and hash; None otherwise."""
    try:
        inflater = zlib.decompressobj()
        data = inflater.decompress(bytes(row.compressed), row.original_size + 1)
    except zlib.error:
        return None
    if not inflater.eof or len(data) != row.original_size:
        return None
    return data if hashlib.sha256(data).hexdigest() == row.sha256 else None


@dataclass(frozen=True)
class AttachmentDownload:
    data: bytes
    file_name: str | None
    media_type: str


def open_attachment_link(token: str) -> AttachmentDownload | None:
    """Return the one attachment a valid link names, or None for every kind of refusal.

    Refused alike: a malformed, altered or expired token; an email no longer in scope
    (account unserved, folder hidden or unmapped, row gone); a stored copy that is damaged
    (a repair is requested) or was replaced by different bytes; a part that is not an
    attachment of the message.
    """
    claim = attachment_links.read_link(token)
    if claim is None:
        return None
    email = Email.objects.readable(resolve_scope()).filter(pk=claim.email_id).first()
    if email is None or email.availability not in _RAW_STORED:
        return None
    raw = stored_raw(email)
    if raw is None or not raw.sha256.startswith(claim.digest_prefix):
        return None
    limits = parse_limits()
    parsed = parse_message(raw.data, limits)
    info = next((a for a in parsed.attachments if a.part_index == claim.part_index), None)
    data = attachment_bytes(raw.data, claim.part_index, limits) if info is not None else None
    if info is None or data is None:
        return None
    return AttachmentDownload(data=data, file_name=info.file_name or None, media_type=info.media_type)


def _parsed_ids(values: Any) -> list[uuid.UUID]:
    if isinstance(values, str | bytes) or not hasattr(values, "__iter__"):
        raise MailFathomError(
            EMAIL_COUNT_REFUSED, f"The storedEmailIds argument must be a list of 1 to {MAX_EMAILS} ids."
        )
    # At most one element past the bound is ever read, whatever the caller sent.
    items = list(islice(iter(values), MAX_EMAILS + 1))
    if not 1 <= len(items) <= MAX_EMAILS:
        raise MailFathomError(
            EMAIL_COUNT_REFUSED, f"The storedEmailIds argument must name 1 to {MAX_EMAILS} emails."
        )
    ids: list[uuid.UUID] = []
    for item in items:
        email_id = _parsed_id(item)
        if email_id in ids:
            raise MailFathomError(
                EMAIL_REPEATED, "The storedEmailIds argument may name each email only once."
            )
        ids.append(email_id)
    return ids


def _parsed_id(item: object) -> uuid.UUID:
    """Check one element's type and length, then parse it; refuse the all-zero UUID."""
    return issued_uuid(item, "Each storedEmailIds element", read=_uuid_from_text)


def _attachment_texts(email_ids: list[uuid.UUID]) -> dict[uuid.UUID, dict[int, AttachmentText]]:
    rows: dict[uuid.UUID, dict[int, AttachmentText]] = {}
    for row in AttachmentText.objects.filter(email_id__in=email_ids):
        rows.setdefault(row.email_id, {})[row.part_index] = row
    return rows


def _participants(email_ids: list[uuid.UUID]) -> dict[uuid.UUID, list[Participant]]:
    rows: dict[uuid.UUID, list[Participant]] = {}
    for participant in Participant.objects.filter(email_id__in=email_ids).order_by(
        "email_id", "role", "position"
    ):
        rows.setdefault(participant.email_id, []).append(participant)
    return rows


def _failed(email_id: uuid.UUID, code: int, message: str) -> EmailEntry:
    return EmailEntry(stored_email_id=email_id, content=None, failure=Failure(code=code, message=message))


@dataclass
class _Budget:
    per_email: int
    remaining: int

    def take(self, text: str, original: int, scan_cut: bool, *, markup: bool = False) -> Representation:
        """Cut text to the per-email limit and what is left of the call's budget; spend it."""
        allowed = min(self.per_email, self.remaining)
        if len(text) > allowed:
            cause = TruncatedBy.READ_BUDGET if self.remaining < self.per_email else TruncatedBy.BODY_LIMIT
            text = _cut(text, allowed, markup=markup)
        elif scan_cut:
            cause = TruncatedBy.SCAN_CEILING
        else:
            cause = TruncatedBy.NONE
        self.remaining -= len(text)
        return Representation(text=text, original_character_count=original, truncated_by=cause)


def _cut(text: str, length: int, *, markup: bool) -> str:
    """Cut at length, never inside a redaction marker, nor inside a tag or entity in markup."""
    text = text[:length]
    opening = text.rfind("[")
    tail = text[opening:] if opening != -1 else ""
    if tail and "]" not in tail and (_MARKER_START.startswith(tail) or tail.startswith(_MARKER_START)):
        text = text[:opening]
    if markup:
        if text.rfind("<") > text.rfind(">"):
            text = text[: text.rfind("<")]
        ampersand = text.rfind("&")
        if ampersand > text.rfind(";") and len(text) - ampersand <= 10:
            text = text[:ampersand]
    return text


def _content(
    email: Email,
    participants: list[Participant],
    raw: StoredRaw | None,
    limits: ParseLimits,
    budget: _Budget,
    *,
    scanning: bool,
    include_html: bool,
    include_links: bool,
    texts: dict[int, AttachmentText] | None = None,
) -> EmailContent:
    parsed = parse_message(raw.data, limits) if raw is not None else None
    readable = parsed if email.availability == Availability.AVAILABLE else None
    plain = _representation(readable.text_body if readable is not None else "", budget, scanning, html=False)
    truncated = readable is not None and "text-truncated" in readable.defects
    if truncated and plain.truncated_by == TruncatedBy.NONE:
        # The parser itself stopped short; originalCharacterCount is then a lower bound.
        plain = plain.model_copy(update={"truncated_by": TruncatedBy.BODY_LIMIT})
    html = None
    if include_html and readable is not None and readable.has_html and raw is not None:
        markup = sanitized_html(raw.data, limits)
        html = _representation(markup, budget, scanning, html=True) if markup is not None else None
    attachments = [
        _attachment(email, info, raw, include_links) for info in (parsed.attachments if parsed else ())
    ]
    if texts is not None and parsed is not None:
        attachments = [
            _with_text(attachment, texts.get(info.part_index), email.attachment_text, budget, scanning)
            for attachment, info in zip(attachments, parsed.attachments, strict=True)
        ]
    return EmailContent(
        account_id=email.account.account_id,
        folder_alias=email.folder.mapping.alias if email.folder.mapping else "",
        size_bytes=email.size_bytes,
        headers=_headers(email, participants, scanning),
        body=Body(availability=_AVAILABILITY[email.availability], plain_text=plain, sanitized_html=html),
        attachments=attachments,
        attachment_counts=_counts(email),
        remote_flags=RemoteFlags.of(email),
    )


def _representation(text: str, budget: _Budget, scanning: bool, *, html: bool) -> Representation:
    original = len(text)
    scan_cut = False
    if scanning:
        scanned = sensitive.scan_html(text) if html else sensitive.scan_body(text)
        text, scan_cut = scanned.text, scanned.withheld
    return budget.take(text, original, scan_cut, markup=html)


def _with_text(
    attachment: Attachment, row: AttachmentText | None, joined: str, budget: _Budget, scanning: bool
) -> Attachment:
    """`attachment` with its extraction state and, when there is text, as much as the bounds allow."""
    if row is None:
        return attachment.model_copy(update={"text_state": TextState.PENDING})
    state = _TEXT_STATES.get(row.outcome, TextState.UNREADABLE)
    text = row.text_in(joined) if state == TextState.EXTRACTED else ""
    represented = _representation(text, budget, scanning, html=False) if text else None
    if represented is not None and row.truncated and represented.truncated_by == TruncatedBy.NONE:
        # Extraction itself stopped at its output bound; the count is then a lower bound.
        represented = represented.model_copy(update={"truncated_by": TruncatedBy.BODY_LIMIT})
    return attachment.model_copy(update={"text_state": state, "extracted_text": represented})


class _Described(TypedDict):
    """The fields of an Attachment that do not depend on its download link."""

    file_name: str | None
    media_type: str
    size_bytes: int
    was_file_name_normalized: bool


def _attachment(email: Email, info: AttachmentInfo, raw: StoredRaw | None, include_links: bool) -> Attachment:
    described: _Described = {
        "file_name": info.file_name or None,
        "media_type": info.media_type,
        "size_bytes": info.size,
        "was_file_name_normalized": info.name_was_normalized,
    }
    if not include_links:
        return Attachment(**described, download_state=DownloadState.NOT_REQUESTED)
    if raw is None or not attachment_links.links_available():
        return Attachment(**described, download_state=DownloadState.UNAVAILABLE)
    link = attachment_links.issue_link(email.pk, info.part_index, raw.sha256)
    return Attachment(
        **described,
        download_state=DownloadState.ISSUED,
        download_url=link.url,
        download_expires_at=link.expires_at,
    )


def _headers(email: Email, participants: list[Participant], scanning: bool) -> Headers:
    names_left = SCANNED_DISPLAY_NAMES

    def mailbox(address: str, name: str) -> Mailbox:
        nonlocal names_left
        shown: str | None = name or None
        if scanning and shown is not None:
            # Past the fortieth name nothing is scanned, so nothing is shown.
            shown = sensitive.redact(shown) if names_left > 0 else None
            names_left -= 1
        return Mailbox(address=address, display_name=shown)

    sender = (
        mailbox(email.sender_address, email.sender_name)
        if email.sender_address or email.sender_name
        else None
    )
    by_role: dict[str, list[Mailbox]] = {"to": [], "cc": [], "bcc": [], "reply_to": []}
    for role in ("to", "cc", "bcc", "reply_to"):
        for participant in participants:
            if participant.role == role:
                by_role[role].append(mailbox(participant.address, participant.display_name))
    return Headers(
        message_id=email.message_id or None,
        subject=sensitive.redact(email.subject) if scanning else email.subject,
        from_=sender,
        to=by_role["to"],
        cc=by_role["cc"],
        bcc=by_role["bcc"],
        reply_to=by_role["reply_to"],
        sent_at=email.sent_at,
        received_at=email.received_at,
        in_reply_to=email.in_reply_to or None,
        references=list(email.references),
    )


def _counts(email: Email) -> AttachmentCounts | None:
    if email.attachment_count is None:
        return None
    return AttachmentCounts(
        attachment_count=email.attachment_count,
        inline_resource_count=email.inline_count or 0,
        total_size_bytes=email.attachment_total_bytes or 0,
        encrypted=email.encrypted,
        unverified_signature=email.unverified_signature,
        unexpanded_tnef=email.unexpanded_tnef,
    )

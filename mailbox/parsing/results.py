"""Plain, immutable results of parsing: no Django, no I/O."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime


@dataclass(frozen=True)
class Address:
    """One mailbox: address with a lower-cased domain ("" when unusable) and a decoded display name."""

    address: str
    display_name: str


@dataclass(frozen=True)
class AttachmentInfo:
    """One real attachment; part_index finds it again with attachment_bytes()."""

    file_name: str
    name_was_normalized: bool
    media_type: str
    size: int
    part_index: int


@dataclass(frozen=True)
class BulkHeaders:
    """The header signals is_bulk() reads, already cleaned and bounded."""

    auto_submitted: str = ""
    has_list_id: bool = False
    has_list_unsubscribe: bool = False
    precedence: str = ""


@dataclass(frozen=True)
class ParsedMessage:
    """Everything MailFathom keeps from one raw message; bounded in size whatever the input."""

    message_id: str = ""
    in_reply_to: str = ""
    references: tuple[str, ...] = ()
    subject: str = ""
    sent_at: datetime | None = None
    sender: Address | None = None
    to: tuple[Address, ...] = ()
    cc: tuple[Address, ...] = ()
    bcc: tuple[Address, ...] = ()
    reply_to: tuple[Address, ...] = ()
    text_body: str = ""
    has_html: bool = False
    attachments: tuple[AttachmentInfo, ...] = ()
    inline_count: int = 0
    attachment_total_size: int = 0
    encrypted: bool = False
    unverified_signature: bool = False
    unexpanded_tnef: bool = False
    bulk_headers: BulkHeaders = field(default_factory=BulkHeaders)
    defects: tuple[str, ...] = ()

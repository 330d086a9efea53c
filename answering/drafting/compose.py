"""The reply message a draft becomes in the Drafts folder: headers from the answered mail, our body.

Threading follows RFC 5322 section 3.6.4: In-Reply-To names the answered message, and
References is its References (or, lacking one, its In-Reply-To) followed by its
Message-ID, at most 32 ids with the middle dropped (the first and the latest 31 kept).
The body is text/plain in UTF-8; the transfer encoding is what the standard library picks
(7bit for short ASCII lines, quoted-printable otherwise), with CRLF line ends.
"""

from __future__ import annotations

import re
import secrets
from datetime import datetime
from email import policy
from email.headerregistry import Address
from email.message import EmailMessage
from email.utils import format_datetime

from answering.models import Draft
from mailbox.models import Email, ParticipantRole

MAX_REFERENCES = 32
# A draft's copies carry Message-IDs "<draft id>.<12 hex>@<domain>": the draft id finds
# every copy ever appended, the random part tells one version from the next.
_VERSION_HEX = 12
FALLBACK_DOMAIN = "mailfathom.invalid"
_REPLY_PREFIX = re.compile(r"^\s*(re|aw|sv|antw)\s*:", re.IGNORECASE)
_LINE_BREAKS = re.compile(r"[\r\n\t]+")
_DOMAIN = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9.-]{0,251}[A-Za-z0-9])?")


def reply_references(email: Email) -> list[str]:
    """The References of a reply to `email` (ids without brackets), at most 32, the middle dropped."""
    ids = list(email.references) or ([email.in_reply_to] if email.in_reply_to else [])
    ids.append(email.message_id)
    unique: list[str] = []
    for message_id in map(_bare, ids):
        if message_id and message_id not in unique:
            unique.append(message_id)
    if len(unique) > MAX_REFERENCES:
        unique = unique[:1] + unique[-(MAX_REFERENCES - 1) :]
    return unique


def _bare(message_id: str) -> str:
    """A Message-ID without brackets or whitespace (parsing stores them so; older rows may differ)."""
    return re.sub(r"\s+", "", message_id).strip("<>")


def reply_subject(subject: str) -> str:
    """`subject` with "Re: " in front, unless it already opens with a reply prefix (Re:, AW:, SV:)."""
    flat = _LINE_BREAKS.sub(" ", subject).strip()
    if _REPLY_PREFIX.match(flat):
        return flat
    return f"Re: {flat}" if flat else "Re:"


def _address(name: str, address: str) -> Address | None:
    """An Address for the header, or None when the stored address is not one the header can carry."""
    try:
        return Address(display_name=_LINE_BREAKS.sub(" ", name).strip(), addr_spec=address.strip())
    except Exception:  # the header registry raises its own defect classes for odd input
        return None


def reply_recipients(email: Email) -> list[Address]:
    """Who the reply goes to: the answered mail's Reply-To, else its sender."""
    reply_to = [
        (p.display_name, p.address)
        for p in email.participants.filter(role=ParticipantRole.REPLY_TO).order_by("position")
        if p.address
    ]
    people = reply_to or ([(email.sender_name, email.sender_address)] if email.sender_address else [])
    found = [_address(name, address) for name, address in people]
    return [address for address in found if address is not None]


def reply_sender(draft: Draft) -> Address | None:
    """The account's address: its IMAP user name when that is an address, else where the mail was sent.

    None when neither is usable; the mail client then fills From in when the draft is sent.
    """
    account = draft.account
    if "@" in account.username:
        own = _address(account.display_name, account.username)
        if own is not None:
            return own
    first_to = draft.email.participants.filter(role=ParticipantRole.TO).order_by("position").first()
    if first_to is not None and first_to.address:
        return _address(first_to.display_name, first_to.address)
    return None


def mint_message_id(draft: Draft, sender: Address | None) -> str:
    """A new Message-ID (no brackets) for one version of `draft`, in the sender's domain."""
    domain = sender.domain if sender is not None and _DOMAIN.fullmatch(sender.domain or "") else ""
    return f"{draft.id}.{secrets.token_hex(_VERSION_HEX // 2)}@{domain or FALLBACK_DOMAIN}"


def is_version_of(draft: Draft, message_id: str) -> bool:
    """Whether `message_id` is one that mint_message_id() could have given `draft`."""
    prefix = f"{draft.id}."
    if not message_id.startswith(prefix):
        return False
    version, at, _ = message_id[len(prefix) :].partition("@")
    return bool(at) and len(version) == _VERSION_HEX and all(c in "0123456789abcdef" for c in version)


def compose_reply(draft: Draft, message_id: str, *, now: datetime) -> bytes:
    """The RFC 5322 bytes of `draft` as a reply to its email, with Message-ID `message_id` (no brackets)."""
    email = draft.email
    message = EmailMessage(policy=policy.SMTP)
    sender = reply_sender(draft)
    if sender is not None:
        message["From"] = sender
    recipients = reply_recipients(email)
    if recipients:
        message["To"] = recipients
    message["Subject"] = reply_subject(email.subject)
    message["Date"] = format_datetime(now)
    message["Message-ID"] = f"<{message_id}>"
    if _bare(email.message_id):
        message["In-Reply-To"] = f"<{_bare(email.message_id)}>"
    references = reply_references(email)
    if references:
        message["References"] = " ".join(f"<{ref}>" for ref in references)
    body = draft.body.replace("\r\n", "\n").replace("\r", "\n")
    message.set_content(body if body.endswith("\n") else body + "\n", charset="utf-8")
    return message.as_bytes()

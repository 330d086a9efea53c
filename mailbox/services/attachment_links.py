"""Attachment download links: mint and read the signed token, and the response policy.

A link is MAILFATHOM_PUBLIC_BASE_URL + "/attachments/<token>". The token is signed with
the "attachment-link" purpose key (mailfathom.core.signing), so no other signed value (a cursor)
can stand in for one, and it names one email, one part index, an expiry, and a prefix of
the stored message's SHA-256 so a link stops working if the stored copy is replaced by
different bytes. It is a bearer capability: whoever holds it may fetch that one file until
it expires (MAILFATHOM_ATTACHMENT_LINK_MINUTES, 1 to 30). Nothing here touches the
database; content.open_attachment_link checks scope and reads the bytes.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from urllib.parse import quote

from django.conf import settings
from django.utils import timezone

from mailfathom.core import signing

PURPOSE = "attachment-link"
PATH_PREFIX = "/attachments/"
MAX_LINK_MINUTES = 30  # the setting's own maximum; a token claiming longer is refused
MAX_TOKEN_LENGTH = 512
DIGEST_PREFIX_LENGTH = 16
_PAYLOAD_VERSION = "1"

# Media types served as they are: inert in a browser. Anything else (text/html,
# image/svg+xml, application/xhtml+xml, scripts, ...) is served as application/octet-stream.
SERVED_MEDIA_TYPES = frozenset(
    {
        "application/pdf",
        "image/png",
        "image/jpeg",
        "image/gif",
        "image/webp",
        "text/plain",
    }
)


@dataclass(frozen=True)
class IssuedLink:
    url: str
    expires_at: datetime


@dataclass(frozen=True)
class LinkClaim:
    """What a valid, unexpired token names."""

    email_id: uuid.UUID
    part_index: int
    digest_prefix: str


def public_base_url() -> str:
    return str(settings.MAILFATHOM.public_base_url).strip().rstrip("/")


def links_available() -> bool:
    """Whether this deployment can mint links: a public address and a non-empty key ring."""
    return bool(public_base_url()) and bool(signing.ring())


def issue_link(email_id: uuid.UUID, part_index: int, sha256: str, now: datetime | None = None) -> IssuedLink:
    """Mint a link to one attachment; call only when links_available()."""
    minutes = int(settings.MAILFATHOM.attachment_link_minutes)
    expires_at = (now or timezone.now()).astimezone(UTC).replace(microsecond=0) + timedelta(minutes=minutes)
    payload = ":".join(
        (
            _PAYLOAD_VERSION,
            email_id.hex,
            str(part_index),
            str(int(expires_at.timestamp())),
            sha256[:DIGEST_PREFIX_LENGTH],
        )
    )
    token = signing.sign(PURPOSE, payload.encode("ascii"))
    return IssuedLink(url=f"{public_base_url()}{PATH_PREFIX}{token}", expires_at=expires_at)


def read_link(token: str, now: datetime | None = None) -> LinkClaim | None:
    """Return what a token names, or None when it is malformed, altered, foreign or expired.

    The caller cannot tell those apart and must not: every None gets one response.
    """
    if not isinstance(token, str) or not 0 < len(token) <= MAX_TOKEN_LENGTH:
        return None
    payload = signing.verify(PURPOSE, token)
    if payload is None:
        return None
    try:
        version, email_hex, part, expires, digest = payload.decode("ascii").split(":")
        if version != _PAYLOAD_VERSION or not part.isdigit() or not expires.isdigit():
            return None
        claim = LinkClaim(email_id=uuid.UUID(hex=email_hex), part_index=int(part), digest_prefix=digest)
        expires_at = datetime.fromtimestamp(int(expires), tz=UTC)
    except (ValueError, OverflowError, OSError):
        return None
    moment = now or timezone.now()
    if moment >= expires_at or expires_at > moment + timedelta(minutes=MAX_LINK_MINUTES, seconds=1):
        return None
    return claim


def served_media_type(media_type: str) -> str:
    """Return the Content-Type a download is served with: the part's if inert, else octet-stream."""
    lowered = media_type.strip().lower()
    return lowered if lowered in SERVED_MEDIA_TYPES else "application/octet-stream"


def content_disposition(file_name: str | None) -> str:
    """Return an attachment disposition carrying the normalized name (RFC 6266 / 5987)."""
    if not file_name:
        return "attachment"
    return f"attachment; filename*=UTF-8''{quote(file_name, safe='')}"

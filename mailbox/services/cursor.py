"""Continuation cursors for the timeline: a signed position bound to one selection and direction.

A cursor carries the (received_at, id) of the last email a page returned, the reading
direction, and the fingerprint of the selection it was issued for. It is signed with the
keyring under its own purpose, so it cannot be forged, edited, or replayed as another kind
of token. Refusals name the argument only, never the text a caller sent:

- 52001: the text is no cursor this server issued (too long, truncated, edited, hand-written,
  signed by a key outside the ring, or carrying a payload of the wrong shape);
- 52002: a genuine cursor issued for other filters, another scope, or the other direction.

The length is checked before anything is decoded.
"""

from __future__ import annotations

import json
import re
import uuid
from dataclasses import dataclass
from datetime import datetime

from mailfathom import keys
from mailfathom.errors import CURSOR_FOR_OTHER_SELECTION, CURSOR_NOT_ISSUED, MailFathomError

PURPOSE = "timeline-cursor"
MAX_CURSOR_LENGTH = 2000
PAYLOAD_VERSION = 1

_FINGERPRINT = re.compile(r"[0-9a-f]{64}")
_NOT_ISSUED_MESSAGE = CURSOR_NOT_ISSUED.sentence
_OTHER_SELECTION_MESSAGE = CURSOR_FOR_OTHER_SELECTION.message(
    other="different filters or a different direction"
)


@dataclass(frozen=True)
class Position:
    """Where a page ended: the last email's received time and identifier."""

    received_at: datetime
    email_id: uuid.UUID


def issue(position: Position, direction: str, fingerprint: str) -> str:
    """Return a signed cursor continuing after `position` for this direction and selection."""
    payload = {
        "v": PAYLOAD_VERSION,
        "t": position.received_at.isoformat(),
        "i": str(position.email_id),
        "d": direction,
        "f": fingerprint,
    }
    return keys.sign(PURPOSE, json.dumps(payload, separators=(",", ":"), sort_keys=True).encode())


@dataclass(frozen=True)
class DecodedCursor:
    position: Position
    direction: str
    fingerprint: str

    def require_match(self, direction: str, fingerprint: str) -> Position:
        """Return the position if the cursor belongs to this direction and selection, else 52002."""
        if direction != self.direction or fingerprint != self.fingerprint:
            raise MailFathomError(CURSOR_FOR_OTHER_SELECTION, _OTHER_SELECTION_MESSAGE)
        return self.position


def decode(text: object, directions: tuple[str, ...]) -> DecodedCursor:
    """Authenticate and parse a cursor without touching the database; 52001 if it is not ours."""
    if not isinstance(text, str) or not text or len(text) > MAX_CURSOR_LENGTH:
        raise MailFathomError(CURSOR_NOT_ISSUED, _NOT_ISSUED_MESSAGE)
    payload = keys.verify(PURPOSE, text)
    if payload is None:
        raise MailFathomError(CURSOR_NOT_ISSUED, _NOT_ISSUED_MESSAGE)
    try:
        data = json.loads(payload)
        if not isinstance(data, dict) or data.get("v") != PAYLOAD_VERSION:
            raise ValueError("unknown cursor version")
        received_at = datetime.fromisoformat(data["t"])
        email_id = uuid.UUID(data["i"])
        direction = data["d"]
        fingerprint = data["f"]
        if (
            received_at.tzinfo is None
            or direction not in directions
            or not isinstance(fingerprint, str)
            or not _FINGERPRINT.fullmatch(fingerprint)
        ):
            raise ValueError("cursor payload out of shape")
    except (ValueError, TypeError, KeyError) as error:
        raise MailFathomError(CURSOR_NOT_ISSUED, _NOT_ISSUED_MESSAGE) from error
    return DecodedCursor(Position(received_at, email_id), direction, fingerprint)

"""Continuation cursors for the timeline: a signed position bound to one selection and direction.

A cursor carries the (received_at, id) of the last email a page returned, the direction and
the fingerprint of its selection, signed under its own purpose (mailfathom.core.cursors,
which also owns the refusals: 52001 not issued here, 52002 issued for another selection).
"""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass
from datetime import datetime

from mailfathom.core import cursors

PURPOSE = "timeline-cursor"
MAX_CURSOR_LENGTH = cursors.MAX_CURSOR_LENGTH

_FINGERPRINT = re.compile(r"[0-9a-f]{64}")
_OTHER_SELECTION = "different filters or a different direction"


@dataclass(frozen=True)
class Position:
    """Where a page ended: the last email's received time and identifier."""

    received_at: datetime
    email_id: uuid.UUID


def issue(position: Position, direction: str, fingerprint: str) -> str:
    """Return a signed cursor continuing after `position` for this direction and selection."""
    fields = {
        "t": position.received_at.isoformat(),
        "i": str(position.email_id),
        "d": direction,
        "f": fingerprint,
    }
    return cursors.seal(PURPOSE, fields)


@dataclass(frozen=True)
class DecodedCursor:
    position: Position
    direction: str
    fingerprint: str

    def require_match(self, direction: str, fingerprint: str) -> Position:
        """Return the position if the cursor belongs to this direction and selection, else 52002."""
        if direction != self.direction or fingerprint != self.fingerprint:
            raise cursors.for_other_selection(_OTHER_SELECTION)
        return self.position


def decode(text: object, directions: tuple[str, ...]) -> DecodedCursor:
    """Authenticate and parse a cursor without touching the database; 52001 if it is not ours."""
    data = cursors.opened(PURPOSE, text)
    try:
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
        raise cursors.not_issued() from error
    return DecodedCursor(Position(received_at, email_id), direction, fingerprint)

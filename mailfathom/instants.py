"""The one reading of an instant a caller writes: ISO 8601 with a time zone, as UTC.

PostgreSQL accepts UTC offsets up to 15:59 while Python parses up to 23:59, so an offset
such as +16:00 passed through unchanged reached the database and failed there (found by
schemathesis). Every instant is therefore converted to UTC here, before any query sees it;
one that cannot be (it falls outside the years datetime can hold once shifted) is refused
like any other unreadable instant.
"""

from __future__ import annotations

from datetime import UTC, datetime

MAX_INSTANT_LENGTH = 64  # counted before parsing; a real ISO 8601 instant is at most 32


def parse_instant(text: object, max_length: int = MAX_INSTANT_LENGTH) -> datetime | None:
    """The UTC instant `text` names, or None when it is not text, too long, naive or unreadable."""
    if not isinstance(text, str) or len(text) > max_length:
        return None
    try:
        parsed = datetime.fromisoformat(text)
    except ValueError:
        return None
    if parsed.tzinfo is None or parsed.utcoffset() is None:
        return None
    try:
        return parsed.astimezone(UTC)
    except OverflowError:
        return None

"""Instants in and out: the one reading of an instant a caller writes, and how the console writes one.

In: ISO 8601 with a time zone, converted to UTC before any query sees it. PostgreSQL
accepts UTC offsets up to 15:59 where Python parses up to 23:59, so an offset such as
+16:00 passed through would fail in the database; one that cannot be shifted into the
years datetime holds is refused like any other unreadable instant.

Out: to the second ("2026-12-01 19:55:03 UTC") and as an age ("12 s ago"), so a run that
found nothing still visibly moves its "last committed" time on a refresh.
"""

from __future__ import annotations

from datetime import UTC, datetime

from django.utils import timezone
from django.utils.translation import gettext

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


# --- writing one for a person --------------------------------------------------------------


def to_the_second(moment: datetime) -> str:
    local = timezone.localtime(moment)
    return local.strftime("%Y-%m-%d %H:%M:%S ") + (local.tzname() or "")


def duration(seconds: float) -> str:
    """A length of time in its two largest units: "45 s", "3 min 20 s", "2 h 5 min", "3 d 4 h"."""
    whole = max(0, int(round(seconds)))
    if whole < 60:
        return f"{whole} s"
    minutes, secs = divmod(whole, 60)
    if minutes < 60:
        return f"{minutes} min {secs} s" if secs else f"{minutes} min"
    hours, minutes = divmod(minutes, 60)
    if hours < 48:
        return f"{hours} h {minutes} min" if minutes else f"{hours} h"
    days, hours = divmod(hours, 24)
    return f"{days} d {hours} h" if hours else f"{days} d"


def relative(moment: datetime, now: datetime | None = None) -> str:
    """ "12 s ago", or "in 3 min" for an instant still to come."""
    now = now or timezone.now()
    seconds = (now - moment).total_seconds()
    if seconds >= 0:
        return gettext("%(duration)s ago") % {"duration": duration(seconds)}
    return gettext("in %(duration)s") % {"duration": duration(-seconds)}


def stamp(moment: datetime | None, now: datetime | None = None, *, never: str = "never") -> str:
    """ "2026-12-01 19:55:03 UTC (12 s ago)", or `never`."""
    if moment is None:
        return never
    return f"{to_the_second(moment)} ({relative(moment, now)})"

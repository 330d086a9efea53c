"""How the console writes an instant and a length of time: to the second, and relative to now.

A run that found nothing still moves its "last committed" time, so the console shows
instants to the second ("2026-12-01 19:55:03 UTC") and as an age ("12 s ago"); a refresh
visibly changes them. Shared by every app's admin and the status page.
"""

from __future__ import annotations

from datetime import datetime

from django.utils import timezone


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
        return f"{duration(seconds)} ago"
    return f"in {duration(-seconds)}"


def stamp(moment: datetime | None, now: datetime | None = None, *, never: str = "never") -> str:
    """ "2026-12-01 19:55:03 UTC (12 s ago)", or `never`."""
    if moment is None:
        return never
    return f"{to_the_second(moment)} ({relative(moment, now)})"

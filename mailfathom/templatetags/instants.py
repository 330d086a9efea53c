"""Template tags for instants and lengths of time (mailfathom.core.instants)."""

from __future__ import annotations

from datetime import datetime

from django import template
from django.utils.html import format_html
from django.utils.safestring import SafeString

from mailfathom.core import instants

register = template.Library()


@register.simple_tag
def when(moment: datetime | None, now: datetime | None = None, never: str = "never") -> SafeString | str:
    """<time> with the age as its text ("12 s ago") and the instant to the second as its title."""
    if moment is None:
        return never
    return format_html(
        '<time datetime="{}" title="{}">{}</time>',
        moment.isoformat(),
        instants.to_the_second(moment),
        instants.relative(moment, now),
    )


@register.filter
def duration(seconds: float | None) -> str:
    return "" if seconds is None else instants.duration(seconds)


@register.filter
def percent(fraction: float | None) -> str:
    if fraction is None:
        return "–"
    value = fraction * 100
    return f"{value:.0f} %" if value in (0, 100) or value >= 10 else f"{value:.1f} %"


@register.filter
def thousands(value: int | float | None) -> str:
    if value is None:
        return "–"
    return f"{value:,.0f}" if isinstance(value, float) else f"{value:,}"


@register.filter
def of_ceiling(used: int | None, ceiling: int) -> float | None:
    return None if used is None or not ceiling else min(1.0, used / ceiling)

"""Small charts for the status page, drawn server-side as inline SVG (no script, no CDN).

Only numbers and dates go into a chart; every text is escaped all the same.
"""

from __future__ import annotations

from collections.abc import Sequence

from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

from mailbox.services.coverage_status import CoveragePoint, DayCount

WIDTH, HEIGHT = 420, 130
LEFT, RIGHT, TOP, BOTTOM = 44, 8, 10, 22
AXIS = 'stroke="currentColor" stroke-opacity="0.4" stroke-width="1"'
TEXT = 'font-size="10" fill="currentColor"'


def _svg(chart_id: str, title: str, body: list[str]) -> SafeString:
    return mark_safe(  # noqa: S308 (every value below is a number or escaped)
        f'<svg id="{escape(chart_id)}" class="status-chart" role="img" viewBox="0 0 {WIDTH} {HEIGHT}" '
        f'width="{WIDTH}" height="{HEIGHT}" xmlns="http://www.w3.org/2000/svg">'
        f"<title>{escape(title)}</title>{''.join(body)}</svg>"
    )


def _frame(top_label: str) -> list[str]:
    bottom = HEIGHT - BOTTOM
    return [
        f'<line x1="{LEFT}" y1="{TOP}" x2="{LEFT}" y2="{bottom}" {AXIS}/>',
        f'<line x1="{LEFT}" y1="{bottom}" x2="{WIDTH - RIGHT}" y2="{bottom}" {AXIS}/>',
        f'<text x="{LEFT - 4}" y="{TOP + 8}" text-anchor="end" {TEXT}>{escape(top_label)}</text>',
        f'<text x="{LEFT - 4}" y="{bottom}" text-anchor="end" {TEXT}>0</text>',
    ]


def stored_per_day_chart(days: Sequence[DayCount]) -> SafeString:
    """Bars of mail stored per day, oldest on the left; each bar's title gives its day and count."""
    peak = max((d.stored for d in days), default=0)
    body = _frame(f"{peak:,}")
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
    slot = plot_w / max(1, len(days))
    for n, day in enumerate(days):
        height = (day.stored / peak) * plot_h if peak else 0
        x = LEFT + n * slot + slot * 0.15
        y = TOP + plot_h - height
        body.append(
            f'<rect x="{x:.1f}" y="{y:.1f}" width="{slot * 0.7:.1f}" height="{height:.1f}" '
            f'fill="#417690" data-day="{day.day.isoformat()}" data-stored="{day.stored}">'
            f"<title>{day.day.isoformat()}: {day.stored:,} stored</title></rect>"
        )
    if days:
        body.append(
            f'<text x="{LEFT}" y="{HEIGHT - 6}" {TEXT}>{escape(days[0].day.isoformat())}</text>'
            f'<text x="{WIDTH - RIGHT}" y="{HEIGHT - 6}" text-anchor="end" {TEXT}>'
            f"{escape(days[-1].day.isoformat())}</text>"
        )
    return _svg("chart-stored-per-day", "Mail stored per day", body)


def coverage_chart(points: Sequence[CoveragePoint]) -> SafeString:
    """A line of embedding coverage (0 to 100 %) over the sampled period."""
    body = _frame("100 %")
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
    if points:
        first, last = points[0].at.timestamp(), points[-1].at.timestamp()
        span = max(1.0, last - first)
        coords = [
            (
                LEFT + ((p.at.timestamp() - first) / span) * plot_w if len(points) > 1 else LEFT + plot_w,
                TOP + plot_h * (1 - max(0.0, min(1.0, p.coverage))),
            )
            for p in points
        ]
        path = " ".join(f"{x:.1f},{y:.1f}" for x, y in coords)
        body.append(f'<polyline points="{path}" fill="none" stroke="#417690" stroke-width="2"/>')
        x, y = coords[-1]
        body.append(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="3" fill="#417690"/>')
        start, end = (escape(p.at.strftime("%Y-%m-%d %H:%M")) for p in (points[0], points[-1]))
        body.append(
            f'<text x="{LEFT}" y="{HEIGHT - 6}" {TEXT}>{start}</text>'
            f'<text x="{WIDTH - RIGHT}" y="{HEIGHT - 6}" text-anchor="end" {TEXT}>{end}</text>'
        )
    else:
        body.append(
            f'<text x="{LEFT + 8}" y="{TOP + plot_h / 2}" {TEXT}>'
            "No samples yet: beat takes one every 5 minutes.</text>"
        )
    return _svg("chart-coverage", "Embedding coverage over time", body)

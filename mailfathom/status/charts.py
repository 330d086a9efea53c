"""Small charts for the status page, drawn server-side as inline SVG (no script, no CDN).

Each chart says in itself which window it covers and labels both axes. Only numbers and
dates go into a chart; every text is escaped all the same. Whatever the figures, nothing is
drawn outside the frame: positions are clamped to it.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

from mailbox.services.coverage_status import SAMPLE_SECONDS, CoverageHistory, CoveragePoint, DayCount
from mailfathom.templatetags.instants import percent

WIDTH, HEIGHT = 420, 160
LEFT, RIGHT, TOP, BOTTOM = 50, 10, 22, 30
FRAME_RIGHT, FRAME_BOTTOM = WIDTH - RIGHT, HEIGHT - BOTTOM
PAD = 5  # between the frame and the data, so a point at 0 % or 100 % stays inside
AXIS = 'stroke="currentColor" stroke-opacity="0.4" stroke-width="1"'
GRID = 'stroke="currentColor" stroke-opacity="0.15" stroke-width="1"'
TEXT = 'font-size="10" fill="currentColor"'
COLOUR = "#417690"


def _svg(chart_id: str, title: str, attributes: dict[str, str], body: list[str]) -> SafeString:
    data = "".join(f' data-{name}="{escape(value)}"' for name, value in attributes.items())
    return mark_safe(  # noqa: S308 (every value below is a number or escaped)
        f'<svg id="{escape(chart_id)}" class="status-chart" role="img" viewBox="0 0 {WIDTH} {HEIGHT}" '
        f'width="{WIDTH}" height="{HEIGHT}" xmlns="http://www.w3.org/2000/svg"{data}>'
        f"<title>{escape(title)}</title>{''.join(body)}</svg>"
    )


def _text(x: float, y: float, text: str, anchor: str = "start", css: str = "") -> str:
    kind = f' class="{css}"' if css else ""
    return f'<text{kind} x="{x:.1f}" y="{y:.1f}" text-anchor="{anchor}" {TEXT}>{escape(text)}</text>'


def _frame(heading: str, aside: str, y_title: str, x_first: str, x_last: str) -> list[str]:
    """The frame, a heading above it (left and right), the y axis title and the x axis ends."""
    middle = (TOP + FRAME_BOTTOM) / 2
    return [
        f'<rect x="{LEFT}" y="{TOP}" width="{FRAME_RIGHT - LEFT}" height="{FRAME_BOTTOM - TOP}" '
        f'fill="none" {AXIS}/>',
        _text(LEFT, 12, heading, css="chart-window"),
        _text(FRAME_RIGHT, 12, aside, "end", css="chart-aside") if aside else "",
        f'<text x="10" y="{middle:.1f}" text-anchor="middle" transform="rotate(-90 10 {middle:.1f})" '
        f"{TEXT}>{escape(y_title)}</text>",
        _text(LEFT, FRAME_BOTTOM + 13, x_first, css="chart-x-first"),
        _text(FRAME_RIGHT, FRAME_BOTTOM + 13, x_last, "end", css="chart-x-last"),
    ]


def _clamp(value: float, low: float, high: float) -> float:
    return max(low, min(high, value))


def mail_per_day_chart(days: Sequence[DayCount], stored_today: int) -> SafeString:
    """Bars of mail per day by each email's own date, oldest on the left, and a note of the
    mail stored today (whatever its date); each bar's title gives its day and count."""
    peak = max((d.stored for d in days), default=0)
    first = days[0].day.isoformat() if days else ""
    last = days[-1].day.isoformat() if days else ""
    body = _frame(
        f"By each email's date, last {len(days)} days (UTC)",
        f"{stored_today:,} stored today",
        "emails",
        first,
        last,
    )
    if peak:
        body.append(_text(LEFT - 4, TOP + PAD + 4, f"{peak:,}", "end", css="chart-y-peak"))
    body.append(_text(LEFT - 4, FRAME_BOTTOM - PAD, "0", "end"))
    plot_h = FRAME_BOTTOM - TOP - 2 * PAD
    slot = (FRAME_RIGHT - LEFT) / max(1, len(days))
    for n, day in enumerate(days):
        height = _clamp((day.stored / peak) * plot_h if peak else 0, 0, plot_h)
        x = LEFT + n * slot + slot * 0.15
        y = FRAME_BOTTOM - PAD - height
        body.append(
            f'<rect class="chart-bar" x="{x:.1f}" y="{y:.1f}" width="{slot * 0.7:.1f}" height="{height:.1f}" '
            f'fill="{COLOUR}" data-day="{day.day.isoformat()}" data-stored="{day.stored}">'
            f"<title>{escape(day.day.isoformat())}: {day.stored:,} emails dated that day</title></rect>"
        )
    if not peak:
        body.append(_text(LEFT + 8, (TOP + FRAME_BOTTOM) / 2, "No email is dated in these days."))
    title = f"Mail per day by each email's own date, {first} to {last} (UTC); {stored_today:,} stored today"
    attributes = {"window": f"{first}/{last}", "peak": str(peak), "stored-today": str(stored_today)}
    return _svg("chart-stored-per-day", title, attributes, body)


def _minute(at: datetime) -> str:
    return at.strftime("%Y-%m-%d %H:%M")


def _runs(points: list[CoveragePoint], coords: list[tuple[float, float]]) -> list[list[tuple[float, float]]]:
    """The coordinates cut where samples are missing (beat stopped), each run of two or more."""
    runs: list[list[tuple[float, float]]] = []
    previous: datetime | None = None
    for point, xy in zip(points, coords, strict=True):
        if previous is None or (point.at - previous).total_seconds() > 3 * SAMPLE_SECONDS:
            runs.append([])
        runs[-1].append(xy)
        previous = point.at
    return [run for run in runs if len(run) > 1]


def coverage_chart(history: CoverageHistory) -> SafeString:
    """A line of embedding coverage (0 to 100 %) across the history's whole window.

    The x axis is the window itself, not the span of the samples, so its ends always differ;
    a lone sample is drawn larger and labelled with its figure and time.
    """
    start, end = history.start.timestamp(), history.end.timestamp()
    span = max(1.0, end - start)
    hours = round(span / 3600)
    body = _frame(
        f"Last {hours} hours (UTC), a sample every {SAMPLE_SECONDS // 60} minutes",
        "",
        "coverage",
        _minute(history.start),
        _minute(history.end),
    )
    top, bottom = TOP + PAD, FRAME_BOTTOM - PAD
    for fraction in (1.0, 0.5, 0.0):
        y = bottom - fraction * (bottom - top)
        body.append(f'<line x1="{LEFT}" y1="{y:.1f}" x2="{FRAME_RIGHT}" y2="{y:.1f}" {GRID}/>')
        body.append(_text(LEFT - 4, y + 3, percent(fraction), "end", css="chart-y-label"))
    drawn = [p for p in history.points if p.coverage is not None]
    coords = [
        (
            _clamp(
                LEFT + PAD + (p.at.timestamp() - start) / span * (FRAME_RIGHT - LEFT - 2 * PAD),
                LEFT + PAD,
                FRAME_RIGHT - PAD,
            ),
            _clamp(bottom - (p.coverage or 0.0) * (bottom - top), top, bottom),
        )
        for p in drawn
    ]
    for run in _runs(drawn, coords):
        path = " ".join(f"{x:.1f},{y:.1f}" for x, y in run)
        body.append(f'<polyline points="{path}" fill="none" stroke="{COLOUR}" stroke-width="1.5"/>')
    # A day of points is sent on every refresh, so each says only what is its own; only the
    # latest has a tooltip.
    radius = 2 if len(coords) > 1 else 4
    body.append(f'<g class="coverage-points" fill="{COLOUR}">')
    for n, (point, (x, y)) in enumerate(zip(drawn, coords, strict=True)):
        at = escape(point.at.isoformat(timespec="seconds"))
        tip = f"<title>{escape(_minute(point.at))}: {escape(percent(point.coverage))}</title>"
        body.append(
            f'<circle cx="{x:.1f}" cy="{y:.1f}" r="{radius}" data-at="{at}" data-coverage="{point.coverage}"'
            + (f">{tip}</circle>" if n == len(drawn) - 1 else "/>")
        )
    body.append("</g>")
    if len(coords) == 1:
        (point,), ((x, y),) = drawn, coords
        label = f"{percent(point.coverage)} at {point.at:%H:%M}, the only sample so far"
        left_half = x < (LEFT + FRAME_RIGHT) / 2
        below = y < (TOP + FRAME_BOTTOM) / 2  # the label goes where there is room
        body.append(
            _text(
                x + 8 if left_half else x - 8,
                y + 14 if below else y - 8,
                label,
                "start" if left_half else "end",
                css="chart-only-sample",
            )
        )
    elif not coords:
        message = (
            f"No sample in this window yet: beat takes one every {SAMPLE_SECONDS // 60} minutes."
            if not history.points
            else "Nothing was embeddable in this window."
        )
        body.append(_text(LEFT + 8, (TOP + FRAME_BOTTOM) / 2, message))
    attributes = {
        "window": f"{history.start.isoformat()}/{history.end.isoformat()}",
        "samples": str(len(history.points)),
    }
    title = f"Embedding coverage from {_minute(history.start)} to {_minute(history.end)} (UTC)"
    return _svg("chart-coverage", title, attributes, body)

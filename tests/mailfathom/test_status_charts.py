"""The status page's charts and coverage figure, read as a new operator reads them.

Mail per day is charted by each email's own date, so mail of many days stored in one
moment makes many bars; the coverage chart spans the last day with labelled axes and
nothing drawn outside its frame; the page and /health give one coverage figure; the
measured rate leaves the page once nothing waits. Mail is stored as synchronization
stores it (store_messages), samples as beat records them (CoverageSample rows).
"""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime

import pytest
from django.db import connection
from django.utils import timezone

from accounts.models import UserPreference
from mailbox.models import CoverageSample, Email, Folder
from mailbox.services import coverage_status
from mailbox.services.store import IncomingMessage, store_messages
from tests.mailbox.factories import synced_folder
from tests.mailfathom.status_page import status_page

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("own_provider_health")]

SVG = "{http://www.w3.org/2000/svg}"


@pytest.fixture(autouse=True)
def past_days_counted_afresh():
    """Past days are kept per process for minutes; another test's mail must not be read here."""
    coverage_status.forget_past_days()
    yield
    coverage_status.forget_past_days()


def _message(n: int, sent: datetime | None) -> bytes:
    date = f"Date: {format_datetime(sent)}\r\n" if sent else ""
    return (
        f"From: A <a{n}@example.org>\r\nTo: b@example.org\r\nSubject: chart {n}\r\n"
        f"Message-ID: <chart-{n}@example.org>\r\n{date}\r\nbody {n}\r\n"
    ).encode()


def _store(folder: Folder, dated: list[tuple[datetime | None, datetime | None]]) -> None:
    """Store one message per (Date header, INTERNALDATE) pair, all in one batch."""
    incoming = [
        IncomingMessage(uidvalidity=1, uid=n + 1, size=100, received_at=received, raw=_message(n, sent))
        for n, (sent, received) in enumerate(dated)
    ]
    store_messages(folder, incoming, advance_to_uid=len(dated))


def _svg(page: str, chart_id: str) -> ET.Element:
    """The chart as parsed XML: a chart that is not well-formed fails here."""
    found = re.search(rf'<svg id="{chart_id}".*?</svg>', page, re.S)
    assert found, f"no chart #{chart_id}"
    return ET.fromstring(found.group(0))  # noqa: S314 (our own chart; no DTD is ever written)


def _texts(svg: ET.Element, css: str) -> list[str]:
    return [t.text or "" for t in svg.iter(f"{SVG}text") if t.get("class") == css]


def _noon(days_ago: int) -> datetime:
    today = timezone.now().astimezone(UTC).date()
    return datetime.combine(today - timedelta(days=days_ago), datetime.min.time(), tzinfo=UTC) + timedelta(
        hours=12
    )


def test_mail_of_many_days_stored_in_one_moment_makes_a_bar_for_each_of_its_days(admin_client):
    now = timezone.now()
    _store(
        synced_folder(),
        [
            (_noon(1), now),
            (_noon(3), now),
            (_noon(3), now),
            (_noon(10), now),
            (None, _noon(5)),  # no Date header: the day its server received it
            (_noon(400), now),  # dated before the window: in no bar
        ],
    )

    chart = _svg(status_page(admin_client), "chart-stored-per-day")

    bars = {bar.get("data-day"): int(bar.get("data-stored") or 0) for bar in chart.iter(f"{SVG}rect")}
    bars.pop(None)  # the frame
    today = now.astimezone(UTC).date()
    first = today - timedelta(days=29)
    assert len(bars) == 30 and min(bars) == first.isoformat() and max(bars) == today.isoformat()
    dated = {day: count for day, count in bars.items() if count}
    assert dated == {
        _noon(1).date().isoformat(): 1,
        _noon(3).date().isoformat(): 2,
        _noon(5).date().isoformat(): 1,
        _noon(10).date().isoformat(): 1,
    }
    assert chart.get("data-window") == f"{first.isoformat()}/{today.isoformat()}"
    assert chart.get("data-peak") == "2"
    assert chart.get("data-stored-today") == "6"
    assert _texts(chart, "chart-window") == ["By each email's date, last 30 days (UTC)"]
    assert _texts(chart, "chart-aside") == ["6 stored today"]
    assert _texts(chart, "chart-y-peak") == ["2"]
    assert _texts(chart, "chart-x-first") == [first.isoformat()]
    assert _texts(chart, "chart-x-last") == [today.isoformat()]


def test_the_days_are_utc_days_whatever_zone_the_person_chose(admin_client, admin_user):
    UserPreference.objects.create(user=admin_user, time_zone="Pacific/Kiritimati")  # UTC+14
    _store(synced_folder(), [(_noon(2), None)])  # 02:00 of the next day in that zone

    chart = _svg(status_page(admin_client), "chart-stored-per-day")

    dated = {
        bar.get("data-day") for bar in chart.iter(f"{SVG}rect") if bar.get("data-stored") not in (None, "0")
    }
    assert dated == {_noon(2).date().isoformat()}


def test_a_range_of_mail_dates_is_read_from_its_index():
    now = timezone.now()
    with connection.cursor() as cursor:
        cursor.execute("SET LOCAL enable_seqscan = off")  # the test's own transaction only

    plan = Email.objects.dated_between(now - timedelta(days=30), now).order_by().explain()

    assert "email_mail_date" in plan


def _frame(chart: ET.Element) -> tuple[float, float, float, float]:
    rect = next(chart.iter(f"{SVG}rect"))
    x, y = float(rect.get("x") or 0), float(rect.get("y") or 0)
    return x, y, x + float(rect.get("width") or 0), y + float(rect.get("height") or 0)


def _points_inside(chart: ET.Element) -> list[ET.Element]:
    left, top, right, bottom = _frame(chart)
    points = [c for c in chart.iter(f"{SVG}circle") if c.get("data-at")]
    for point in points:
        cx, cy, r = (float(point.get(a) or 0) for a in ("cx", "cy", "r"))
        assert left <= cx - r and cx + r <= right and top <= cy - r and cy + r <= bottom, point.attrib
    return points


def test_a_day_of_samples_is_drawn_inside_labelled_axes(admin_client):
    now = timezone.now()
    samples = [
        CoverageSample(
            taken_at=now - timedelta(minutes=5 * n), emails=1000, embeddable=1000, embedded=1000 - 3 * n
        )
        for n in range(288)  # a day of beat's samples, the newest first
    ]
    samples.append(CoverageSample(taken_at=now - timedelta(days=2), emails=10, embeddable=10, embedded=0))
    # Counts read a moment apart can say more embedded than embeddable: drawn at 100 %.
    samples[0] = CoverageSample(taken_at=now, emails=1000, embeddable=1000, embedded=1010)
    CoverageSample.objects.bulk_create(samples)

    chart = _svg(status_page(admin_client), "chart-coverage")

    assert _texts(chart, "chart-y-label") == ["100 %", "50 %", "0 %"]
    window_start, window_end = (
        datetime.fromisoformat(t) for t in (chart.get("data-window") or "").split("/")
    )
    assert window_end - window_start == timedelta(days=1)
    (first,), (last,) = _texts(chart, "chart-x-first"), _texts(chart, "chart-x-last")
    assert (first, last) == (f"{window_start:%Y-%m-%d %H:%M}", f"{window_end:%Y-%m-%d %H:%M}")
    assert first != last
    assert _texts(chart, "chart-window") == ["Last 24 hours (UTC), a sample every 5 minutes"]
    points = _points_inside(chart)
    assert len(points) == 288 == int(chart.get("data-samples") or 0)
    assert points[-1].get("data-coverage") == "1.0"
    assert points[0].get("data-coverage") == str(round((1000 - 3 * 287) / 1000, 4))
    assert datetime.fromisoformat(points[0].get("data-at") or "") == samples[287].taken_at.replace(
        microsecond=0
    )
    assert chart.find(f"{SVG}polyline") is not None


def test_the_line_breaks_where_beat_took_no_sample(admin_client):
    now = timezone.now()
    minutes = (180, 175, 170, 10, 5, 0)  # beat stopped for two and a half hours
    CoverageSample.objects.bulk_create(
        CoverageSample(taken_at=now - timedelta(minutes=m), emails=10, embeddable=10, embedded=5)
        for m in minutes
    )

    chart = _svg(status_page(admin_client), "chart-coverage")

    lines = [line.get("points", "").split() for line in chart.iter(f"{SVG}polyline")]
    assert [len(points) for points in lines] == [3, 3]
    assert len(_points_inside(chart)) == 6


def test_a_lone_sample_is_labelled_with_its_figure_and_time(admin_client):
    taken = timezone.now() - timedelta(minutes=3)
    CoverageSample.objects.create(taken_at=taken, emails=100, embeddable=100, embedded=87)

    chart = _svg(status_page(admin_client), "chart-coverage")

    (point,) = _points_inside(chart)
    assert point.get("data-coverage") == "0.87"
    assert _texts(chart, "chart-only-sample") == [
        f"87 % at {taken.astimezone(UTC):%H:%M}, the only sample so far"
    ]
    assert _texts(chart, "chart-x-first") != _texts(chart, "chart-x-last")
    assert chart.find(f"{SVG}polyline") is None


def _health_backlog(client) -> dict:
    return json.loads(client.get("/health").content)["parts"]["embeddingBacklog"]


def _embedding(page: str) -> tuple[dict[str, str], str]:
    """The Embedding section's data-* attributes and its content."""
    found = re.search(r'<dl[^>]*\bid="status-embedding"([^>]*)>(.*?)</dl>', page, re.S)
    assert found, "no Embedding section"
    return dict(re.findall(r'data-([a-z-]+)="([^"]*)"', found.group(1))), found.group(2)


def test_health_and_the_page_give_one_coverage_while_the_latest_sample_lags(admin_client, client):
    folder = synced_folder()
    _store(folder, [(_noon(1), None), (_noon(2), None), (_noon(3), None)])
    Email.objects.filter(folder=folder).update(embedded=True)
    # Beat's last sample was taken while one email still waited (so /health once said 0.6667).
    CoverageSample.objects.create(
        taken_at=timezone.now() - timedelta(minutes=10), emails=3, embeddable=3, embedded=2
    )

    page = status_page(admin_client)
    backlog = _health_backlog(client)

    assert _embedding(page)[0]["coverage"] == "1.0"
    assert "(100 %)" in page
    assert backlog["coverage"] == backlog["sampledCoverage"] == 1.0
    assert backlog["pending"] == 0

    Email.objects.filter(pk=Email.objects.filter(folder=folder).values("pk")[:1]).update(embedded=False)

    assert _embedding(status_page(admin_client))[0]["coverage"] == "0.6667"
    assert _health_backlog(client)["coverage"] == 0.6667


def test_measured_rate_leaves_the_page_once_nothing_waits(admin_client):
    folder = synced_folder()
    _store(folder, [(_noon(1), None), (_noon(2), None)])
    CoverageSample.objects.create(
        taken_at=timezone.now() - timedelta(minutes=10), emails=2, embeddable=2, embedded=0
    )

    _, waiting = _embedding(status_page(admin_client))
    Email.objects.filter(folder=folder).update(embedded=True)
    _, done = _embedding(status_page(admin_client))

    assert 'id="status-embedding-rate"' in waiting and "Measured rate" in waiting
    assert 'id="status-embedding-rate"' not in done and "Measured rate" not in done
    assert '<dd id="status-embedding-eta">nothing is waiting</dd>' in done


def test_mail_stored_after_the_page_was_read_shows_on_its_own_day_at_once():
    """The past days are kept for minutes, but not across a run that stored mail: an operator
    who opened the status page before the first synchronization sees its mail on the next
    refresh, not ten minutes later."""
    folder = synced_folder()
    before = coverage_status.count_mail()
    assert all(day.stored == 0 for day in before.per_day)

    _store(folder, [(_noon(5), None), (_noon(5), None), (_noon(9), None)])

    after = {day.day: day.stored for day in coverage_status.count_mail().per_day if day.stored}
    assert after == {_noon(5).date(): 2, _noon(9).date(): 1}

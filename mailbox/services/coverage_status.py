"""How much of the local copy is embedded, how fast the backlog shrinks, and mail per day.

Coverage is one figure, `coverage_fraction`, read from the counts of now by the status page
and /health alike, and from each CoverageSample for the chart. Samples are taken every few
minutes by `record_coverage_sample` (the beat task `mailbox.sample_coverage`); the rate the
backlog shrinks at is measured between the oldest sample of the last RATE_WINDOW that is at
least RATE_MIN_SPAN old and the counts of now. Counts only, never content.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta

from django.db import connection, transaction
from django.db.models import Count
from django.db.models.functions import TruncDate
from django.utils import timezone

from mailbox.models import Availability, CoverageSample, Email, mail_date
from mailbox.services.sync_status import stored_per_folder
from mailfathom.core.resettable import forgotten_when_changed

SAMPLE_SECONDS = 300
SAMPLES_KEPT = timedelta(days=30)
RATE_WINDOW = timedelta(hours=1)
RATE_MIN_SPAN = timedelta(minutes=4)
HISTORY = timedelta(days=1)  # the coverage chart: every sample of the last day
HISTORY_POINTS = 400  # at most this many drawn, whatever the sampling rate (beat's gives 288)
MAIL_DAYS = 30  # the chart of mail per day, by each email's own date


def coverage_fraction(embedded: int, embeddable: int) -> float | None:
    """Embedding coverage: embedded emails of those whose content is stored, to four places.

    The one figure the status page, its chart and /health show. Mail whose content is not
    stored cannot be embedded and is in neither count. None while nothing is embeddable.
    """
    if embeddable <= 0:
        return None
    return round(max(0, min(embedded, embeddable)) / embeddable, 4)


@dataclass(frozen=True)
class Counts:
    emails: int
    embeddable: int
    embedded: int

    @property
    def pending(self) -> int:
        return max(0, self.embeddable - self.embedded)

    @property
    def coverage(self) -> float | None:
        return coverage_fraction(self.embedded, self.embeddable)


@dataclass(frozen=True)
class CoveragePoint:
    at: datetime
    coverage: float | None  # coverage_fraction of the sample; None when nothing was embeddable


@dataclass(frozen=True)
class CoverageHistory:
    """The samples of a window, oldest first, with the window itself (a chart draws all of it)."""

    start: datetime
    end: datetime
    points: tuple[CoveragePoint, ...]


@dataclass(frozen=True)
class EmbeddingProgress:
    counts: Counts
    per_minute: float | None  # measured; None without two samples far enough apart
    measured_since: datetime | None
    remaining_seconds: float | None  # None when nothing is pending or no progress is measured
    history: CoverageHistory


@dataclass(frozen=True)
class DayCount:
    day: date  # UTC, by the email's own date (mailbox.models.mail_date)
    stored: int  # emails of the local copy dated that day


def current_counts(per_folder: dict[int, int] | None = None) -> Counts:
    """Stored, embeddable (content available) and embedded emails, each read from an index.

    The total is the sum of the emails per folder (`per_folder` when already read); the
    emails without content and the backlog come from their partial indexes, so no query
    reads every row.
    """
    per_folder = stored_per_folder() if per_folder is None else per_folder
    emails = sum(per_folder.values())
    unavailable = Email.objects.exclude(availability=Availability.AVAILABLE).count()
    pending = Email.objects.filter(embedded=False, availability=Availability.AVAILABLE).count()
    embeddable = emails - unavailable
    return Counts(emails=emails, embeddable=embeddable, embedded=max(0, embeddable - pending))


def record_coverage_sample(now: datetime | None = None) -> CoverageSample:
    """Take one sample of the counts, and drop samples older than SAMPLES_KEPT."""
    now = now or timezone.now()
    counts = current_counts()
    with transaction.atomic():
        sample, _ = CoverageSample.objects.update_or_create(
            taken_at=now,
            defaults={"emails": counts.emails, "embeddable": counts.embeddable, "embedded": counts.embedded},
        )
        CoverageSample.objects.filter(taken_at__lt=now - SAMPLES_KEPT).delete()
    return sample


def coverage_history(end: datetime, span: timedelta = HISTORY) -> CoverageHistory:
    """Every sample of the `span` before `end` (the unique index on taken_at reads the range).

    Beat samples every SAMPLE_SECONDS, so a day is 288 points; were samples taken faster,
    they are thinned evenly to HISTORY_POINTS, the latest always kept.
    """
    rows = list(
        CoverageSample.objects.filter(taken_at__gte=end - span, taken_at__lte=end)
        .order_by("taken_at")
        .values_list("taken_at", "embeddable", "embedded")
    )
    if len(rows) > HISTORY_POINTS:
        step = -(-len(rows) // HISTORY_POINTS)
        rows = rows[::-1][::step][::-1]
    points = tuple(
        CoveragePoint(at=at, coverage=coverage_fraction(embedded, embeddable))
        for at, embeddable, embedded in rows
    )
    return CoverageHistory(start=end - span, end=end, points=points)


def embedding_progress(*, now: datetime | None = None, counts: Counts | None = None) -> EmbeddingProgress:
    """The backlog now, the rate it shrinks at, when it empties at that rate, and its history."""
    now = now or timezone.now()
    counts = counts or current_counts()
    reference = (
        CoverageSample.objects.filter(taken_at__gte=now - RATE_WINDOW, taken_at__lte=now - RATE_MIN_SPAN)
        .order_by("taken_at")
        .first()
    )
    per_minute = remaining = since = None
    if reference is not None:
        minutes = (now - reference.taken_at).total_seconds() / 60
        per_minute = max(0.0, (counts.embedded - reference.embedded) / minutes)
        since = reference.taken_at
        if counts.pending and per_minute > 0:
            remaining = counts.pending / per_minute * 60
    if not counts.pending:
        remaining = None
    return EmbeddingProgress(
        counts=counts,
        per_minute=per_minute,
        measured_since=since,
        remaining_seconds=remaining,
        history=coverage_history(now),
    )


@dataclass(frozen=True)
class MailCounts:
    """Everything the status page counts over the emails."""

    per_folder: dict[int, int]  # emails held per folder
    per_day: list[DayCount]  # emails dated on each of the last days (UTC), oldest first
    stored_today: int  # emails MailFathom stored since midnight (UTC), whatever their date
    totals: Counts


def count_mail(*, now: datetime | None = None, days: int = MAIL_DAYS) -> MailCounts:
    """Emails per folder, emails per day by their own date over the last `days` (UTC), the
    emails stored today, and the coverage totals.

    An email's day is its own date (mailbox.models.mail_date: the Date header, else when
    its server received it), so an import of years of mail spreads over the days it was
    written on instead of making one bar of the day it was stored; mail dated outside the
    window (older, or ahead of today by a wrong clock) is in no bar. Each figure is read
    from an index: emails per folder from the folder index (index-only), the backlog and the
    emails without content from their partial indexes, the days from the mail date index,
    where days before today are kept for DAYS_KEPT_SECONDS in this process while the number
    of emails held stays the same (a run that stores old mail shows at once), stored today
    from the synced_at index. So the status page stays within its budget at 20 accounts and
    200 folders (bench/status.py).
    """
    now = (now or timezone.now()).astimezone(UTC)
    per_folder = stored_per_folder()
    midnight = datetime.combine(now.date(), datetime.min.time(), tzinfo=UTC)
    return MailCounts(
        per_folder=per_folder,
        per_day=_per_day(now, days, held=sum(per_folder.values())),
        stored_today=Email.objects.filter(synced_at__gte=midnight).count(),
        totals=current_counts(per_folder),
    )


DAYS_KEPT_SECONDS = 600
_past_days: dict[tuple[str, date, int, int], tuple[float, dict[date, int]]] = {}
_past_days_lock = threading.Lock()


def _dated_between(start: datetime, end: datetime) -> dict[date, int]:
    rows = Email.objects.dated_between(start, end).order_by()
    # UTC days, as the chart says, whatever zone the person reading has activated.
    by_day = rows.annotate(day=TruncDate(mail_date(), tzinfo=UTC)).values("day").annotate(n=Count("id"))
    return dict(by_day.values_list("day", "n"))


def _per_day(now: datetime, days: int, *, held: int) -> list[DayCount]:
    """Emails per day by date; `held` is how many emails there are now: when it moves, mail
    was stored or deleted and the kept past days are read again."""
    now = now.astimezone(UTC)
    today = now.date()
    first = today - timedelta(days=days - 1)
    midnight = datetime.combine(today, datetime.min.time(), tzinfo=UTC)
    key = (connection.settings_dict.get("NAME") or "", today, days, held)
    with _past_days_lock:
        cached = _past_days.get(key)
    if cached is None or time.monotonic() - cached[0] > DAYS_KEPT_SECONDS:
        start = datetime.combine(first, datetime.min.time(), tzinfo=UTC)
        cached = (time.monotonic(), _dated_between(start, midnight))
        with _past_days_lock:
            _past_days.clear()  # one entry: yesterday's key is never asked again
            _past_days[key] = cached
    found = {**cached[1], **_dated_between(midnight, midnight + timedelta(days=1))}
    wanted = [first + timedelta(days=n) for n in range(days)]
    return [DayCount(day=day, stored=found.get(day, 0)) for day in wanted]


@forgotten_when_changed("DATABASES")
def forget_past_days() -> None:
    with _past_days_lock:
        _past_days.clear()


@dataclass(frozen=True)
class Backlog:
    pending: int
    coverage: float | None  # coverage_fraction of the counts of now, as the status page shows it


def backlog() -> Backlog:
    """The embedding backlog and coverage for /health, from the counts the status page reads.

    Coverage is not taken from the latest sample: a sample is up to SAMPLE_SECONDS old, and
    as old as beat's last run when beat is down, so it disagreed with the page. The counts
    are read from indexes (current_counts): emails per folder index-only, the backlog and
    the mail without content from their partial indexes.
    """
    counts = current_counts()
    return Backlog(pending=counts.pending, coverage=counts.coverage)

"""How much of the local copy is embedded, how fast the backlog shrinks, and mail stored per day.

Coverage over time comes from CoverageSample rows, one taken every few minutes by
`record_coverage_sample` (the beat task `mailbox.sample_coverage`); the rate the backlog
shrinks at is measured between the oldest sample of the last RATE_WINDOW that is at least
RATE_MIN_SPAN old and the counts of now. Counts only, never content.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime, timedelta

from django.db import transaction
from django.db.models import Count, Q
from django.db.models.functions import TruncDate
from django.utils import timezone

from mailbox.models import Availability, CoverageSample, Email

SAMPLE_SECONDS = 300
SAMPLES_KEPT = timedelta(days=30)
RATE_WINDOW = timedelta(hours=1)
RATE_MIN_SPAN = timedelta(minutes=4)
HISTORY = timedelta(days=14)
CHART_POINTS = 200


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
        return self.embedded / self.embeddable if self.embeddable else None


@dataclass(frozen=True)
class CoveragePoint:
    at: datetime
    coverage: float  # 0..1 of the embeddable mail


@dataclass(frozen=True)
class EmbeddingProgress:
    counts: Counts
    per_minute: float | None  # measured; None without two samples far enough apart
    measured_since: datetime | None
    remaining_seconds: float | None  # None when nothing is pending or no progress is measured
    history: tuple[CoveragePoint, ...]


@dataclass(frozen=True)
class DayCount:
    day: date
    stored: int


def current_counts() -> Counts:
    """Stored, embeddable (content available) and embedded emails, in one scan."""
    row = Email.objects.order_by().aggregate(
        emails=Count("id"),
        embeddable=Count("id", filter=Q(availability=Availability.AVAILABLE)),
        embedded=Count("id", filter=Q(availability=Availability.AVAILABLE, embedded=True)),
    )
    return Counts(emails=row["emails"], embeddable=row["embeddable"], embedded=row["embedded"])


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


def _history(since: datetime) -> tuple[CoveragePoint, ...]:
    rows = list(
        CoverageSample.objects.filter(taken_at__gte=since)
        .order_by("taken_at")
        .values_list("taken_at", "embeddable", "embedded")
    )
    step = max(1, len(rows) // CHART_POINTS)
    kept = rows[::step]
    if rows and kept[-1] is not rows[-1]:
        kept.append(rows[-1])
    return tuple(
        CoveragePoint(at=at, coverage=(embedded / embeddable) if embeddable else 1.0)
        for at, embeddable, embedded in kept
    )


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
        history=_history(now - HISTORY),
    )


def stored_per_day(*, now: datetime | None = None, days: int = 14) -> list[DayCount]:
    """Emails stored on each of the last `days` days (UTC), oldest first, zero days included."""
    now = now or timezone.now()
    first = (now - timedelta(days=days - 1)).date()
    start = datetime.combine(first, datetime.min.time(), tzinfo=now.tzinfo)
    found = dict(
        Email.objects.filter(synced_at__gte=start)
        .order_by()
        .annotate(day=TruncDate("synced_at"))
        .values("day")
        .annotate(n=Count("id"))
        .values_list("day", "n")
    )
    days_wanted = [first + timedelta(days=n) for n in range(days)]
    return [DayCount(day=day, stored=found.get(day, 0)) for day in days_wanted]


@dataclass(frozen=True)
class Backlog:
    pending: int
    sampled_coverage: float | None  # from the latest sample; None before the first


def backlog() -> Backlog:
    """The embedding backlog, cheaply: for /health, which load balancers call often.

    The partial index email_pending_embedding keeps the count as small as the backlog;
    coverage comes from the latest sample rather than from a scan of every email.
    """
    pending = Email.objects.filter(embedded=False, availability=Availability.AVAILABLE).count()
    sample = CoverageSample.objects.order_by("-taken_at").first()
    coverage = None
    if sample is not None and sample.embeddable:
        coverage = round(sample.embedded / sample.embeddable, 4)
    return Backlog(pending=pending, sampled_coverage=coverage)

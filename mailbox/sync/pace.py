"""An account's download pace: how many message bytes synchronization fetches per UTC day.

Providers lock a mailbox that downloads too much in a day (Gmail: about 2.5 GB), and a
first backfill is exactly that. The pace is checked before each batch: once the day's
bytes reach it, the folder waits until the next UTC midnight (code 61013), so a batch
may pass the pace by at most one batch (MAX_BATCH_BYTES). Zero means no pace.
"""

from __future__ import annotations

from datetime import UTC, date, datetime, time, timedelta

from django.db.models import F

from accounts.models import MailAccount
from mailbox.models import DownloadDay
from mailbox.sync.failures import PaceSpent


def _day(now: datetime) -> date:
    return now.astimezone(UTC).date()


def next_midnight(now: datetime) -> datetime:
    return datetime.combine(_day(now) + timedelta(days=1), time.min, tzinfo=UTC)


def downloaded_today(account: MailAccount, now: datetime) -> int:
    row = (
        DownloadDay.objects.filter(account=account, day=_day(now))
        .values_list("downloaded_bytes", flat=True)
        .first()
    )
    return int(row or 0)


def check(account: MailAccount, now: datetime) -> None:
    """Raise PaceSpent when the account has downloaded its pace today."""
    if account.download_bytes_per_day and downloaded_today(account, now) >= account.download_bytes_per_day:
        raise PaceSpent(next_midnight(now))


def spend(account: MailAccount, downloaded: int, now: datetime) -> None:
    """Add `downloaded` bytes to the account's day (a no-op for an account without a pace)."""
    if not account.download_bytes_per_day or downloaded <= 0:
        return
    day = _day(now)
    if not DownloadDay.objects.filter(account=account, day=day).update(
        downloaded_bytes=F("downloaded_bytes") + downloaded
    ):
        _, created = DownloadDay.objects.get_or_create(
            account=account, day=day, defaults={"downloaded_bytes": downloaded}
        )
        if not created:  # made by another run between the UPDATE and here
            DownloadDay.objects.filter(account=account, day=day).update(
                downloaded_bytes=F("downloaded_bytes") + downloaded
            )

"""An account's download pace against a real Dovecot: a day's bytes spent, the next day's run.

The pace is checked before each batch, so a run stops after the batch that crossed it,
records 61013 with the folder waiting until the next UTC midnight, and the next day
carries on where the last committed batch ended, storing every message exactly once.
"""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db.models import F
from django.utils import timezone

from mailbox.models import DownloadDay, Folder
from mailbox.sync import engine, pace
from mailbox.sync.engine import synchronize_account
from mailfathom.core.errors import Code
from tests.mailbox.imap_support import account_for, add_user, local_state, stored_twice

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.dovecot]

MESSAGES = 5


@pytest.fixture(autouse=True, params=["always", "never"])
def parse_ahead(request, monkeypatch):
    """Every case with batches parsed on the second thread, and with each parsed in place."""
    monkeypatch.setattr(engine, "PARSE_AHEAD", request.param)
    return request.param


def _message(n: int) -> bytes:
    """Message `n`; every one is the same number of bytes, so the pace counts messages."""
    head = [
        f"From: Sender <sender{n:03d}@example.org>",
        "To: alice@example.org",
        f"Subject: paced message {n:03d}",
        f"Message-ID: <paced-{n:03d}@example.org>",
        "Date: Mon, 2 Nov 2026 10:00:00 +0000",
    ]
    body = "\r\n".join(f"line {line:02d} of message {n:03d}: " + "x" * 60 for line in range(20))
    return ("\r\n".join(head) + "\r\n\r\n" + body + "\r\n").encode()


SIZE = len(_message(1))
assert all(len(_message(n)) == SIZE for n in range(1, MESSAGES + 1))


@pytest.fixture
def user(dovecot):
    user = add_user(dovecot)
    user.append("INBOX", [_message(n) for n in range(1, MESSAGES + 1)])
    return user


def test_a_spent_pace_stops_after_the_batch_that_crossed_it_and_the_next_day_finishes(user, monkeypatch):
    monkeypatch.setattr(engine, "BATCH_SIZE", 1)
    server = user.state("INBOX")
    assert len(server) == MESSAGES
    # Two and a half messages a day: the third batch crosses the pace, the fourth never starts.
    account = account_for(user, download_bytes_per_day=SIZE * 5 // 2)

    before = timezone.now()
    first = synchronize_account(account.pk, force=True)
    after = timezone.now()

    inbox_run = next(f for f in first.folders if f.alias == "inbox")
    assert (inbox_run.stored, inbox_run.failure_code) == (3, Code.DOWNLOAD_PACE_SPENT)
    inbox = Folder.objects.get(account=account, remote_name="INBOX")
    assert inbox.last_failure_code == Code.DOWNLOAD_PACE_SPENT
    assert inbox.backoff_until in {pace.next_midnight(before), pace.next_midnight(after)}
    stored = local_state(account, "inbox")
    assert stored == {uid: server[uid] for uid in sorted(server)[:3]}
    assert DownloadDay.objects.get(account=account).downloaded_bytes == 3 * SIZE

    # A second run the same day fetches nothing more.
    synchronize_account(account.pk, force=True)
    assert local_state(account, "inbox") == stored
    assert DownloadDay.objects.get(account=account).downloaded_bytes == 3 * SIZE

    # The next UTC day: the day's bytes are yesterday's, and the run carries on.
    DownloadDay.objects.filter(account=account).update(day=F("day") - timedelta(days=1))
    second = synchronize_account(account.pk, force=True)

    inbox_run = next(f for f in second.folders if f.alias == "inbox")
    assert (inbox_run.stored, inbox_run.failure_code) == (MESSAGES - 3, None)
    assert local_state(account, "inbox") == server
    assert stored_twice(account) == 0
    inbox.refresh_from_db()
    assert (inbox.last_failure_code, inbox.backoff_until) == (None, None)
    assert sorted(DownloadDay.objects.filter(account=account).values_list("downloaded_bytes", flat=True)) == [
        (MESSAGES - 3) * SIZE,
        3 * SIZE,
    ]


def test_a_pace_of_zero_downloads_everything_and_counts_nothing(user, monkeypatch):
    monkeypatch.setattr(engine, "BATCH_SIZE", 1)
    account = account_for(user, download_bytes_per_day=0)

    run = synchronize_account(account.pk, force=True)

    assert run.failure_code is None
    assert local_state(account, "inbox") == user.state("INBOX")
    assert not Folder.objects.filter(account=account, last_failure_code__isnull=False).exists()
    assert not DownloadDay.objects.filter(account=account).exists()

"""A folder's failing time: set by its first failure since progress, cleared by progress."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from mailbox.services.sync_status import failing_accounts
from mailbox.sync.failures import CANNOT_CONNECT, PROVIDER_LIMIT, TIMED_OUT
from mailbox.sync.folder_state import record_failure
from tests.factories import MailAccountFactory
from tests.mailbox.factories import mapped_folder

pytestmark = pytest.mark.django_db


def test_the_first_failure_starts_the_failing_time_and_later_ones_keep_it():
    folder = mapped_folder(MailAccountFactory(), "inbox")
    record_failure(folder, CANNOT_CONNECT)
    folder.refresh_from_db()
    first = folder.failing_since
    assert first is not None

    record_failure(folder, TIMED_OUT)
    folder.refresh_from_db()
    assert folder.failing_since == first
    assert folder.last_failure_at > first


def test_a_pause_starts_no_failing_time():
    folder = mapped_folder(MailAccountFactory(), "inbox")
    record_failure(folder, PROVIDER_LIMIT, resume_at=timezone.now() + timedelta(hours=1))
    folder.refresh_from_db()
    assert folder.failing_since is None


def test_committed_progress_clears_the_failing_time():
    folder = mapped_folder(MailAccountFactory(), "inbox")
    record_failure(folder, CANNOT_CONNECT)
    type(folder).objects.filter(pk=folder.pk).record_progress(timezone.now())
    folder.refresh_from_db()
    assert folder.failing_since is None


def test_failing_accounts_reads_the_earliest_streak_and_each_code_once():
    now = timezone.now()
    account = MailAccountFactory()
    for alias, code, hours in (("a", CANNOT_CONNECT, 3), ("b", TIMED_OUT, 2), ("c", CANNOT_CONNECT, 5)):
        mapped_folder(account, alias, last_failure_code=code, failing_since=now - timedelta(hours=hours))
    mapped_folder(account, "young", last_failure_code=TIMED_OUT, failing_since=now - timedelta(minutes=5))
    paused = mapped_folder(MailAccountFactory(), "paused", last_failure_code=PROVIDER_LIMIT)
    paused.failing_since, paused.backoff_until = now - timedelta(hours=9), now + timedelta(hours=1)
    paused.save()

    found = failing_accounts(timedelta(hours=1), now=now)

    assert list(found) == [account.pk]
    assert found[account.pk].since == now - timedelta(hours=5)
    assert found[account.pk].codes == tuple(sorted((int(CANNOT_CONNECT), int(TIMED_OUT))))
    assert found[account.pk].folders == 3

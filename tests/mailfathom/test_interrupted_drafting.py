"""A drafting run whose worker was killed reads "interrupted" on the status page, not "running".

The run's process is real: a subprocess holds the account's drafting lock on its own
database session, as a run does, and is killed with SIGKILL, which ends the session and
frees the lock.
"""

from __future__ import annotations

import re
import signal
import subprocess
import sys
from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from answering.drafting import runs
from answering.models import DraftRun, RunTrigger
from tests.factories import MailAccountFactory
from tests.support import database_url, wait_for

pytestmark = pytest.mark.django_db(transaction=True)

HOLD_LOCK = """
import sys, time, psycopg
with psycopg.connect(sys.argv[1], autocommit=True) as conn:
    conn.execute("SELECT pg_advisory_lock(%s, %s)", [int(sys.argv[2]), int(sys.argv[3])])
    print("held", flush=True)
    time.sleep(120)
"""


def _last_run_cell(page: str, account_id: str) -> str:
    found = re.search(
        rf'<tr class="status-drafting-account" id="status-drafting-{account_id}".*?</tr>', page, re.S
    )
    assert found, page
    return found.group(0)


def test_an_unfinished_run_whose_lock_is_freed_by_a_kill_reads_interrupted(admin_client):
    account = MailAccountFactory(drafting_enabled=True)
    run = DraftRun.objects.create(
        account=account, trigger=RunTrigger.SCHEDULE, started_at=timezone.now() - runs.LOCK_GRACE * 2
    )
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD_LOCK, database_url(), str(runs._DRAFTING_LOCK), str(account.pk)],
        stdout=subprocess.PIPE,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == b"held"
        url = reverse("system-status")
        cell = _last_run_cell(admin_client.get(url).content.decode(), account.account_id)
        assert "running" in cell and "interrupted" not in cell
        holder.send_signal(signal.SIGKILL)
        holder.wait(timeout=10)
        # The server ends the killed client's session (and its lock) once it sees the socket close.
        wait_for(
            lambda: (
                "interrupted" in _last_run_cell(admin_client.get(url).content.decode(), account.account_id)
            ),
            10,
            interval=0.1,
        )
    finally:
        if holder.poll() is None:
            holder.kill()
            holder.wait()
    run.refresh_from_db()
    assert run.interrupted_at is not None and run.ended_at is None
    cell = _last_run_cell(admin_client.get(url).content.decode(), account.account_id)
    assert "its worker died" in cell and "running" not in cell


def test_a_run_just_recorded_or_holding_its_lock_is_not_taken_for_dead():
    account = MailAccountFactory(drafting_enabled=True)
    now = timezone.now()
    young = DraftRun.objects.create(account=account, trigger=RunTrigger.SCHEDULE, started_at=now)
    with runs.account_lock(account.pk) as held:
        assert held
        old_but_locked = DraftRun(
            account=account, trigger=RunTrigger.SCHEDULE, started_at=now - timedelta(hours=1), pk=young.pk
        )
        runs.mark_interrupted_runs([young, old_but_locked], now)
    assert young.interrupted_at is None and old_but_locked.interrupted_at is None
    stale = DraftRun.objects.create(
        account=account, trigger=RunTrigger.SCHEDULE, started_at=now - runs.INTERRUPTED_AFTER * 2
    )
    with runs.account_lock(account.pk):
        runs.mark_interrupted_runs([stale], now)  # a run this old is dead even if something holds the lock
    stale.refresh_from_db()
    assert stale.interrupted_at == now

"""Faults during synchronization: a connection cut at many points, one reconnect per run, concurrent runs."""

from __future__ import annotations

import threading

import pytest
from django.db import connection

from mailbox.models import Email, Folder
from mailbox.sync import engine
from mailbox.sync.engine import synchronize_account
from mailbox.sync.failures import CONNECTION_LOST
from tests.mailbox.fault_proxy import CuttingProxy
from tests.mailbox.imap_support import (
    account_for,
    add_user,
    corpus_messages,
    iter_cut_points,
    local_state,
    stored_twice,
)
from tests.support import wait_for

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.dovecot]

CUT_POINTS = 24


@pytest.fixture(autouse=True, params=["always", "never"])
def parse_ahead(request, monkeypatch):
    """Every case with batches parsed on the second thread, and with each parsed in place."""
    monkeypatch.setattr(engine, "PARSE_AHEAD", request.param)
    return request.param


@pytest.fixture
def user(dovecot):
    return add_user(dovecot)


@pytest.fixture
def proxy(dovecot):
    proxy = CuttingProxy(dovecot.host, dovecot.imap_port)
    yield proxy
    proxy.close()


def _reset_local_copy(account) -> None:
    Email.objects.filter(account=account).delete()
    Folder.objects.filter(account=account).update(
        uidvalidity=None, highest_uid=0, highest_modseq=None, backoff_until=None, consecutive_failures=0
    )


def test_connection_cut_at_many_points_then_a_rerun_leaves_exactly_the_server(user, proxy, monkeypatch):
    monkeypatch.setattr(engine, "BATCH_SIZE", 20)
    user.append("INBOX", corpus_messages("spamassassin/hard-ham-1/", 120))
    server = user.state("INBOX")
    account = account_for(user, port=proxy.port)

    synchronize_account(account.pk)  # measure how many bytes one whole session moves
    total = proxy.last_session_bytes
    assert local_state(account, "inbox") == server
    failures = set()

    for cut in iter_cut_points(total, CUT_POINTS):
        _reset_local_copy(account)
        proxy.cut_after = cut
        interrupted = synchronize_account(account.pk, force=True)
        failures.add(interrupted.failure_code)
        partial = Email.objects.filter(account=account).count()
        proxy.cut_after = None
        synchronize_account(account.pk, force=True)

        assert local_state(account, "inbox") == server, f"cut after {cut} of {total} bytes"
        assert stored_twice(account) == 0
        assert partial <= len(server)

    assert proxy.cuts >= CUT_POINTS
    assert failures - {None}, "no cut ever interrupted a run"
    assert user.state("INBOX") == server  # and the server saw nothing but reads


def test_same_account_synchronized_twice_at_once_never_interleaves(user, monkeypatch):
    user.append("INBOX", corpus_messages("spamassassin/easy-ham-1/", 150))
    account = account_for(user)
    monkeypatch.setattr(engine, "BATCH_SIZE", 10)
    runs = []
    barrier = threading.Barrier(2)

    def run() -> None:
        try:
            barrier.wait()
            runs.append(synchronize_account(account.pk))
        finally:
            connection.close()

    threads = [threading.Thread(target=run) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)

    inbox_runs = [f for r in runs for f in r.folders if f.alias == "inbox"]
    assert len(inbox_runs) == 2
    assert sorted(f.skipped_locked for f in inbox_runs) == [False, True]
    assert sum(f.stored for f in inbox_runs) == 150
    assert local_state(account, "inbox") == user.state("INBOX")
    assert stored_twice(account) == 0


def _measured_session(account, proxy) -> int:
    """Bytes one whole session moves through the proxy; the local copy is reset afterwards."""
    proxy.last_session_bytes = 0
    synchronize_account(account.pk, force=True)
    wait_for(lambda: proxy.last_session_bytes > 0, message=lambda: "the measuring session never ended")
    total = proxy.last_session_bytes
    _reset_local_copy(account)
    return total


def test_a_session_cut_mid_backfill_logs_in_again_once_and_finishes_the_folder(user, proxy, monkeypatch):
    monkeypatch.setattr(engine, "BATCH_SIZE", 5)
    user.append("INBOX", corpus_messages("spamassassin/easy-ham-1/", 60))
    server = user.state("INBOX")
    account = account_for(user, port=proxy.port)
    total = _measured_session(account, proxy)
    inbox_starts = []

    def heard(progress) -> None:
        if progress.label == "inbox" and progress.done == 0:
            inbox_starts.append(progress.total)
            proxy.cut_after = None  # the first session holds its cut; the next one is left whole

    proxy.cut_after = total // 2  # mid-FETCH: the bodies are most of a session's bytes
    cuts_before = proxy.cuts
    run = synchronize_account(account.pk, force=True, progress=heard)

    assert proxy.cuts == cuts_before + 1
    assert run.failure_code is None
    inbox_run = next(f for f in run.folders if f.alias == "inbox")
    assert (inbox_run.failure_code, inbox_run.stored) == (None, len(server))
    assert len(inbox_starts) == 2 and inbox_starts[0] == len(server) > inbox_starts[1] > 0
    assert sorted(f.alias for f in run.folders) == ["inbox", "junk", "sent"]  # each folder once
    assert local_state(account, "inbox") == server
    assert stored_twice(account) == 0
    assert not Folder.objects.filter(account=account, last_failure_code__isnull=False).exists()


def test_a_second_cut_in_the_same_run_ends_it_with_connection_lost_and_loses_nothing(
    user, proxy, monkeypatch
):
    monkeypatch.setattr(engine, "BATCH_SIZE", 5)
    user.append("INBOX", corpus_messages("spamassassin/easy-ham-1/", 60))
    server = user.state("INBOX")
    account = account_for(user, port=proxy.port)
    total = _measured_session(account, proxy)

    # Every session is cut a third of the way: the resumed one still has more than that to move.
    proxy.cut_after = total // 3
    cuts_before = proxy.cuts
    run = synchronize_account(account.pk, force=True)

    assert proxy.cuts == cuts_before + 2  # one reconnect, no third session
    assert run.failure_code == CONNECTION_LOST
    inbox = Folder.objects.get(account=account, remote_name="INBOX")
    assert inbox.last_failure_code == CONNECTION_LOST
    partial = local_state(account, "inbox")
    assert 0 < len(partial) < len(server)
    assert all(server[uid] == flags for uid, flags in partial.items())
    assert stored_twice(account) == 0

    proxy.cut_after = None
    synchronize_account(account.pk, force=True)
    assert local_state(account, "inbox") == server
    assert stored_twice(account) == 0


def test_a_cut_in_a_later_folder_after_the_reconnect_ends_the_run(user, proxy, monkeypatch):
    monkeypatch.setattr(engine, "BATCH_SIZE", 5)
    user.append("INBOX", corpus_messages("spamassassin/easy-ham-1/", 60))
    user.append("Junk", corpus_messages("spamassassin/spam-1/", 10))
    server = user.state("INBOX")
    account = account_for(user, port=proxy.port)
    total = _measured_session(account, proxy)

    junk_starts = []

    def heard(progress) -> None:
        if progress.done == 0 and progress.label == "inbox":
            proxy.cut_after = None
        if progress.done == 0 and progress.label == "junk":  # folders run by alias: inbox, junk, sent
            junk_starts.append(progress.total)
            if len(junk_starts) == 1:  # only the first session to reach the junk folder is cut
                proxy.cut_now()

    proxy.cut_after = total // 3  # inside the inbox's bodies
    run = synchronize_account(account.pk, force=True, progress=heard)

    assert run.failure_code == CONNECTION_LOST
    assert [(f.alias, f.failure_code) for f in run.folders] == [("inbox", None), ("junk", CONNECTION_LOST)]
    assert local_state(account, "inbox") == server
    assert local_state(account, "junk") == {}
    assert junk_starts == [10]  # no third session tried the junk folder again
    assert Folder.objects.get(account=account, remote_name="Junk").last_failure_code == CONNECTION_LOST

    synchronize_account(account.pk, force=True)
    assert local_state(account, "junk") == user.state("Junk")
    assert stored_twice(account) == 0

"""Faults during synchronization: a connection cut at many points, concurrent runs, a killed worker."""

from __future__ import annotations

import threading

import pytest
from django.db import connection
from django.db.models import Count

from mailbox.models import Email, Folder
from mailbox.sync import engine
from mailbox.sync.engine import synchronize_account
from tests.mailbox.fault_proxy import CuttingProxy
from tests.mailbox.imap_support import account_for, add_user, corpus_messages, iter_cut_points, local_state

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.dovecot]

CUT_POINTS = 24


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


def _duplicates(account) -> int:
    return (
        Email.objects.filter(account=account)
        .values("folder", "uidvalidity", "uid")
        .annotate(n=Count("id"))
        .filter(n__gt=1)
        .count()
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
        assert _duplicates(account) == 0
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
    assert _duplicates(account) == 0

"""Push mode: IMAP IDLE against the real Dovecot delivers new mail within seconds."""

from __future__ import annotations

import threading
import time

import pytest
from django.db import connection

from mailbox.models import Email, Folder
from mailbox.sync.engine import synchronize_account
from mailbox.sync.idle import watch_folder
from tests.mailbox.fault_proxy import CuttingProxy
from tests.mailbox.imap_support import account_for, add_user

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.dovecot]


def _message(n: int) -> bytes:
    return f"From: a@example.org\r\nSubject: push {n}\r\nMessage-ID: <p{n}@x>\r\n\r\nbody {n}\r\n".encode()


def _watch_in_thread(folder_pk: int, stop: threading.Event, results: list, **kwargs) -> threading.Thread:
    def run() -> None:
        try:
            results.append(watch_folder(folder_pk, stop=stop, poll_interval=0.2, **kwargs))
        finally:
            connection.close()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


def test_idle_delivers_a_newly_appended_message_within_seconds(dovecot):
    user = add_user(dovecot)
    user.append("INBOX", [_message(1)])
    account = account_for(user)
    synchronize_account(account.pk)
    inbox = Folder.objects.get(account=account, remote_name="INBOX")
    stop, results = threading.Event(), []
    thread = _watch_in_thread(inbox.pk, stop, results, max_seconds=60)
    time.sleep(1.0)  # let the watcher enter IDLE

    appended_at = time.monotonic()
    user.append("INBOX", [_message(2)])
    while time.monotonic() - appended_at < 10 and Email.objects.filter(folder=inbox).count() < 2:
        time.sleep(0.1)
    latency = time.monotonic() - appended_at
    stop.set()
    thread.join(timeout=10)

    assert Email.objects.filter(folder=inbox).count() == 2, "IDLE did not deliver the message"
    assert latency < 10
    assert results and results[0].failure_code is None
    assert results[0].stored == 1


def test_connection_dropped_while_idling_ends_the_watcher_with_a_failure_code(dovecot):
    user = add_user(dovecot)
    proxy = CuttingProxy(dovecot.host, dovecot.imap_port)
    try:
        account = account_for(user, port=proxy.port)
        inbox_pk = _inbox_pk(account)
        stop, results = threading.Event(), []
        thread = _watch_in_thread(inbox_pk, stop, results, max_seconds=60)
        time.sleep(1.5)  # caught up and idling
        cut_at = time.monotonic()
        proxy.cut_now()
        thread.join(timeout=20)
        noticed_after = time.monotonic() - cut_at
    finally:
        stop.set()
        proxy.close()

    assert results, "the watcher did not end after its connection was dropped"
    assert results[0].failure_code is not None
    assert results[0].synchronizations == 1  # the catch-up before idling
    assert noticed_after < 10


def test_watcher_that_cannot_connect_reports_a_failure_code(dovecot):
    user = add_user(dovecot)
    proxy = CuttingProxy(dovecot.host, dovecot.imap_port)
    try:
        account = account_for(user, port=proxy.port)
        inbox_pk = _inbox_pk(account)
        proxy.cut_after = 1  # the greeting is cut short
        stop, results = threading.Event(), []
        _watch_in_thread(inbox_pk, stop, results, max_seconds=30).join(timeout=30)
    finally:
        proxy.close()

    assert results and results[0].failure_code is not None
    assert results[0].synchronizations == 0


def _inbox_pk(account) -> int:
    from mailbox.sync.folder_state import ensure_folders

    return next(f.pk for f in ensure_folders(account) if f.remote_name == "INBOX")

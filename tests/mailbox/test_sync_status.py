"""What a real run against Dovecot leaves for the status page: the server's count, the run's figures.

And "Synchronize now" on an account never synchronized starts a run that creates its folder
rows and stores its mail (the queued task is run in this process here; the worker's side of
the queue is tested in test_sync_worker).
"""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from mailbox import tasks
from mailbox.models import Folder
from mailbox.services.sync_status import SyncState, account_status
from mailbox.sync.engine import synchronize_account
from tests.mailbox.imap_support import account_for, add_user

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.dovecot]


def _message(n: int) -> bytes:
    return (
        f"From: S <s{n}@example.org>\r\nTo: a@example.org\r\nSubject: status {n}\r\n"
        f"Message-ID: <st{n}@example.org>\r\nDate: Mon, 2 Nov 2026 10:00:00 +0000\r\n\r\nbody\r\n"
    ).encode()


@pytest.fixture
def user(dovecot):
    return add_user(dovecot)


def test_a_run_records_the_servers_count_and_what_it_stored(user):
    user.append("INBOX", [_message(n) for n in range(7)])
    account = account_for(user)

    synchronize_account(account.pk)

    inbox = Folder.objects.get(account=account, remote_name="INBOX")
    assert (inbox.server_message_count, inbox.run_stored) == (7, 7)
    status = account_status(account.pk)
    folder = next(f for f in status.folders if f.alias == "inbox")
    assert (folder.state, folder.stored, folder.server, folder.run_stored) == (SyncState.IDLE, 7, 7, 7)
    assert status.server == 7 and status.stored == 7  # Sent and Junk are empty on the server


def test_a_run_that_finds_nothing_still_moves_last_committed(user):
    user.append("INBOX", [_message(n) for n in range(2)])
    account = account_for(user)
    synchronize_account(account.pk)
    first = Folder.objects.get(account=account, remote_name="INBOX")

    synchronize_account(account.pk, force=True)

    again = Folder.objects.get(account=account, remote_name="INBOX")
    assert again.run_stored == 0 and again.server_message_count == 2
    assert again.last_committed_at > first.last_committed_at
    assert again.run_started_at > first.run_started_at


def test_synchronize_now_before_the_first_run_fills_the_status_page(
    user, admin_client, monkeypatch, django_capture_on_commit_callbacks
):
    user.append("INBOX", [_message(n) for n in range(4)])
    account = account_for(user)
    assert not Folder.objects.filter(account=account).exists()
    monkeypatch.setattr(
        tasks.sync_account, "delay", lambda pk, force=False: tasks.sync_account.apply((pk,), {"force": force})
    )

    with django_capture_on_commit_callbacks(execute=True):
        admin_client.post(reverse("admin:accounts_mailaccount_synchronize", args=[account.pk]))

    page = admin_client.get(reverse("system-status")).content.decode()
    row = re.search(rf'id="status-account-{account.account_id}"[^>]*>', page).group(0)
    assert 'data-state="idle"' in row and 'data-stored="4"' in row and 'data-server="4"' in row
    assert Folder.objects.filter(account=account).count() == 3

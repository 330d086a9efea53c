"""A run whose worker is killed says so, is resumed when its lease expires, and leaves no task behind.

The kill is real: a Celery worker process holding a backfill is sent SIGKILL. The workers
use a Redis of the test's own (tests/redis_server.py), so its `unacked` hash holds only
their tasks, and the production visibility timeout, so nothing but the recovery at start
could hand the killed task out again within the test.
"""

from __future__ import annotations

import re
import uuid
from datetime import timedelta

import pytest
import redis
from django.urls import reverse
from django.utils import timezone

from mailbox.models import Email, Folder
from mailbox.sync.folder_state import ensure_folders
from mailbox.tasks import sync_account, sync_due_accounts
from mailfathom import unacked
from mailfathom.celery import app
from mailfathom.core.redis_store import redis_client
from tests.celery_worker import Worker
from tests.factories import FolderMappingFactory, MailAccountFactory
from tests.mailbox.imap_support import account_for, add_user, local_state
from tests.redis_server import RedisServer
from tests.support import wait_for

LEASE = 10  # the shortest lease the setting allows
BACKFILL = 1500


def _message(n: int) -> bytes:
    padding = "x" * 2000
    return f"From: a@example.org\r\nSubject: kill {n}\r\nMessage-ID: <k{n}@x>\r\n\r\n{padding}\r\n".encode()


def _folder_row(page: str, pk: int) -> str:
    found = re.search(rf'<tr class="status-folder" id="status-folder-{pk}".*?</tr>', page, re.S)
    assert found, page
    return found.group(0)


@pytest.mark.django_db(transaction=True)
@pytest.mark.dovecot
@pytest.mark.slow
def test_a_killed_run_reads_interrupted_and_resumes_when_its_lease_expires(
    dovecot, tmp_path, admin_client, mailfathom_settings
):
    mailfathom_settings(sync_lease_seconds=LEASE)
    user = add_user(dovecot)
    user.append("INBOX", [_message(n) for n in range(BACKFILL)])
    account = account_for(user)
    broker = RedisServer(tmp_path / "redis")
    broker.start()
    env = {
        "REDIS_URL": broker.url,
        "MAILFATHOM_SYNC_LEASE_SECONDS": str(LEASE),
        "MAILFATHOM_CELERY_VISIBILITY_TIMEOUT": "3600",
    }
    first = Worker(tmp_path / "first.log", ("--pool", "solo"), **env)
    second = None
    try:
        with app.connection_for_write(broker.url) as connection:
            sync_account.apply_async((account.pk,), connection=connection)
        stored = lambda: Email.objects.filter(account=account).count()  # noqa: E731
        wait_for(lambda: stored() >= 100, 60, interval=0.05, message=first.output)
        first.kill()
        killed_at = stored()
        assert killed_at < BACKFILL, "the run ended before the kill"
        client = redis.Redis.from_url(broker.url)
        assert client.hlen("unacked") == 1 and client.hlen(unacked.HOLDERS) == 1

        inbox = Folder.objects.get(account=account, remote_name="INBOX")
        url = reverse("system-status")
        assert 'data-state="synchronizing"' in _folder_row(admin_client.get(url).content.decode(), inbox.pk)
        wait_for(lambda: Folder.objects.get(pk=inbox.pk).lease_expires_at < timezone.now(), LEASE + 5)

        row = _folder_row(admin_client.get(url).content.decode(), inbox.pk)
        assert 'data-state="interrupted"' in row
        assert "The run stopped without finishing" in row
        inbox.refresh_from_db()
        assert inbox.interrupted_lease == inbox.lease_token
        assert inbox.interrupted_stored == killed_at == inbox.run_stored
        assert inbox.interrupted_server == BACKFILL
        assert f'data-run-stored="{killed_at}"' in row
        assert inbox.interrupted_at is not None and inbox.interrupted_at <= timezone.now()

        # A worker starting on this host hands the killed task out again at once and resumes.
        second = Worker(tmp_path / "second.log", ("--pool", "solo"), **env)
        wait_for(
            lambda: local_state(account, "inbox") == user.state("INBOX"),
            60,
            interval=0.2,
            message=second.output,
        )
        assert "1 tasks of dead workers handed out again" in second.output(20000)
        wait_for(lambda: client.hlen("unacked") == 0, 20, interval=0.1, message=second.output)
        row = _folder_row(admin_client.get(url).content.decode(), inbox.pk)
        assert 'data-state="idle"' in row and f'data-stored="{BACKFILL}"' in row
    finally:
        first.stop()
        if second is not None:
            second.stop()
        broker.stop()


@pytest.fixture
def queue():
    client = redis_client()
    client.delete("celery")
    yield client
    client.delete("celery")


@pytest.mark.django_db
def test_the_scheduler_queues_an_abandoned_folder_at_its_first_pass_once(queue, mailfathom_settings):
    mailfathom_settings(sync_lease_seconds=LEASE)
    account = MailAccountFactory()
    FolderMappingFactory(account=account)
    (folder,) = ensure_folders(account)
    now = timezone.now()
    # As a killed worker leaves it: just committed, its lease held and expired.
    token = uuid.uuid4()
    Folder.objects.filter(pk=folder.pk).update(
        last_committed_at=now - timedelta(seconds=LEASE + 2),
        lease_token=token,
        lease_expires_at=now - timedelta(seconds=1),
        run_started_at=now - timedelta(seconds=60),
        run_stored=1100,
        server_message_count=5003,
    )
    assert sync_due_accounts() == 1  # its poll interval (300 s) is far from passed
    assert queue.llen("celery") == 1
    assert sync_due_accounts() == 0  # queued once per dead lease, not on every pass
    folder.refresh_from_db()
    assert (folder.interrupted_lease, folder.interrupted_stored, folder.interrupted_server) == (
        token,
        1100,
        5003,
    )
    assert folder.interrupted_at == now - timedelta(seconds=LEASE + 1)  # its last renewal
    assert folder.interruption_pending
    # The resumed run's first commit supersedes the record.
    Folder.objects.filter(pk=folder.pk).record_progress(timezone.now())
    folder.refresh_from_db()
    assert not folder.interruption_pending
    for key in queue.scan_iter("mailfathom:sync:resuming:*"):
        queue.delete(key)

"""Workers outlive a Redis outage: the broker stopped and started again under real workers.

Each test runs its workers against a Redis of its own (tests/redis_server.py), so stopping
it never touches the session's shared Redis. While the broker is away, the default worker
holds an unacknowledged run (blocked on an IMAP server that never greets) and the push
worker an IMAP IDLE watcher on a push-mode account against the session's Dovecot.
"""

from __future__ import annotations

import socket
import threading
import time

import pytest
import redis

from mailbox.models import Email, Folder
from mailbox.sync.engine import synchronize_account
from mailbox.tasks import sync_account, watch_folder
from mailfathom.celery import app
from tests.celery_worker import Worker
from tests.mailbox.imap_support import account_for, add_user
from tests.redis_server import RedisServer
from tests.support import wait_for

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.dovecot, pytest.mark.slow]

DEFAULT_WORKER = ("--pool", "prefork", "--concurrency", "1", "--hostname", "default@%h")
PUSH_WORKER = ("--queues", "push", "--pool", "threads", "--concurrency", "4", "--hostname", "push@%h")
OUTAGE_SECONDS = 4
# The production visibility timeout: a task held across the outage must not be handed out again.
PRODUCTION_VISIBILITY = "3600"


def _message(n: int) -> bytes:
    return f"From: a@example.org\r\nSubject: outage {n}\r\nMessage-ID: <o{n}@x>\r\n\r\nbody {n}\r\n".encode()


class SilentImapServer:
    """Accepts IMAP connections and never greets: a run against it waits until released."""

    def __init__(self) -> None:
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.accepted: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            self.accepted.append(client)

    def release(self) -> None:
        """Close every connection, so a waiting run ends (with a failure code) at once."""
        self.listener.close()
        for client in self.accepted:
            client.close()


@pytest.fixture
def broker(tmp_path):
    server = RedisServer(tmp_path / "redis")
    server.start()
    yield server
    server.stop()


def _publish(broker: RedisServer, task, *args, **options) -> None:
    with app.connection_for_write(broker.url) as connection:
        task.apply_async(args, connection=connection, **options)


def _received(worker: Worker, task: str, after: int = 0) -> int:
    return worker.log.read_text(errors="replace")[after:].count(f"Task {task}[")


def test_workers_keep_consuming_and_idle_keeps_delivering_across_a_redis_outage(dovecot, broker, tmp_path):
    user = add_user(dovecot)
    user.append("INBOX", [_message(1)])
    account = account_for(user, sync_mode="push")
    synchronize_account(account.pk)
    inbox = Folder.objects.get(account=account, remote_name="INBOX")
    sent = Folder.objects.get(account=account, remote_name="Sent")
    silent = SilentImapServer()
    stuck = account_for(add_user(dovecot), port=silent.port, account_id="stuck", display_name="Stuck")
    env = {"REDIS_URL": broker.url, "MAILFATHOM_CELERY_VISIBILITY_TIMEOUT": PRODUCTION_VISIBILITY}
    default = Worker(tmp_path / "default.log", DEFAULT_WORKER, **env)
    push = Worker(tmp_path / "push.log", PUSH_WORKER, **env)
    try:
        _publish(broker, watch_folder, inbox.pk, queue="push")
        _publish(broker, sync_account, stuck.pk)
        wait_for(
            lambda: _received(push, "mailbox.watch_folder") and _received(default, "mailbox.sync_account"),
            60,
            interval=0.1,
            message=lambda: push.output() + default.output(),
        )
        wait_for(lambda: silent.accepted, 30, interval=0.05, message=default.output)
        client = redis.Redis.from_url(broker.url)
        assert client.hlen("unacked") == 2  # both tasks are held, unacknowledged

        broker.stop()
        time.sleep(OUTAGE_SECONDS)
        broker.start()
        marks = {worker: len(worker.log.read_text(errors="replace")) for worker in (default, push)}

        # The IDLE session never needed Redis: new mail still arrives within seconds.
        user.append("INBOX", [_message(2)])
        wait_for(
            lambda: Email.objects.filter(folder=inbox).count() == 2, 15, interval=0.1, message=push.output
        )
        # Both consumers are back: a task published after the outage is taken.
        _publish(broker, watch_folder, sent.pk, queue="push")
        _publish(broker, sync_account, account.pk, force=True)
        wait_for(
            lambda: _received(push, "mailbox.watch_folder", marks[push]),
            30,
            interval=0.1,
            message=push.output,
        )
        silent.release()  # the held run ends and is acknowledged through its old channel
        wait_for(
            lambda: _received(default, "mailbox.sync_account", marks[default]),
            30,
            interval=0.1,
            message=default.output,
        )
        for worker in (default, push):
            assert worker.process.poll() is None, worker.output(8000)
            assert "AttributeError" not in worker.log.read_text(errors="replace"), worker.output(8000)
        # The held run was acknowledged, not handed out again: only the watchers stay unacknowledged.
        wait_for(
            lambda: client.hlen("unacked") == 2,
            30,
            interval=0.1,
            message=lambda: f"{client.hlen('unacked')} unacknowledged\n" + default.output(),
        )
    finally:
        silent.release()
        default.stop()
        if push.process.poll() is None:
            push.kill()  # its watchers would hold a warm shutdown for their whole period

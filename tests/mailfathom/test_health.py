"""/health reports each part; 503 only when a required part (database, Redis) is down.

Also the small things around it: "/" leads to admin, and /favicon.ico is answered quietly.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import time
from datetime import timedelta
from pathlib import Path

import pytest
from django.urls import reverse
from django.utils import timezone

from accounts.models import SyncMode
from mailbox.models import Folder
from mailbox.sync.folder_state import ensure_folders
from mailfathom.core import heartbeat
from tests.factories import FolderMappingFactory, MailAccountFactory
from tests.support import free_port

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("own_provider_health")]

ROOT = Path(__file__).resolve().parents[2]
PARTS = {
    "database",
    "redis",
    "worker",
    "pushWorker",
    "beat",
    "lastSync",
    "embeddingBacklog",
    "attachmentTextBacklog",
    "mailboxSignIn",
}


def _health(client) -> tuple[int, dict]:
    response = client.get("/health")
    return response.status_code, json.loads(response.content)


def test_every_part_is_reported_and_missing_workers_degrade_without_failing(client):
    status, body = _health(client)

    assert status == 200
    assert set(body["parts"]) == PARTS
    assert body["parts"]["database"] == {"status": "ok", "required": True}
    assert body["parts"]["redis"] == {"status": "ok", "required": True}
    assert body["parts"]["worker"]["status"] == "never-seen"
    assert body["parts"]["worker"]["required"] is False
    assert body["status"] == "degraded"


def test_all_parts_ok_is_ok(client):
    heartbeat.record(heartbeat.worker_role("celery"), "w")
    heartbeat.record(heartbeat.BEAT, "b")

    status, body = _health(client)

    assert status == 200
    assert body["parts"]["worker"]["status"] == "ok" and body["parts"]["beat"]["status"] == "ok"
    assert body["parts"]["worker"]["lastSeenSecondsAgo"] <= 5
    assert body["status"] == "ok", body


def test_a_stale_beat_and_failing_folders_are_named(client):
    heartbeat.record(heartbeat.worker_role("celery"), "w")
    heartbeat.record(heartbeat.BEAT, "b", at=time.time() - 3600)
    account = MailAccountFactory()
    FolderMappingFactory(account=account, alias="inbox")
    (folder,) = ensure_folders(account)
    Folder.objects.filter(pk=folder.pk).update(
        last_failure_code=61001, last_committed_at=timezone.now() - timedelta(minutes=2)
    )

    status, body = _health(client)

    assert status == 200 and body["status"] == "degraded"
    assert body["parts"]["beat"] == {"status": "stale", "required": False, "lastSeenSecondsAgo": 3600}
    assert body["parts"]["lastSync"]["status"] == "failing"
    assert body["parts"]["lastSync"]["failingFolders"] >= 1
    assert body["parts"]["embeddingBacklog"]["status"] == "ok"
    assert "pending" in body["parts"]["embeddingBacklog"]


def test_the_push_worker_is_inactive_while_no_account_uses_push(client):
    MailAccountFactory(sync_mode=SyncMode.POLLING)
    heartbeat.record(heartbeat.worker_role("celery"), "w")
    heartbeat.record(heartbeat.BEAT, "b")

    status, body = _health(client)

    assert body["parts"]["pushWorker"]["status"] == "inactive"
    assert body["parts"]["pushWorker"]["pushAccounts"] == 0
    assert status == 200 and body["status"] == "ok", body


@pytest.mark.parametrize(
    ("seconds_ago", "expected"),
    [(None, "never-seen"), (600, "stale"), (0, "ok")],
    ids=["never started", "dead for ten minutes", "alive"],
)
def test_a_push_mode_account_makes_the_push_worker_a_part(client, seconds_ago, expected):
    MailAccountFactory(sync_mode=SyncMode.PUSH)
    heartbeat.record(heartbeat.worker_role("celery"), "w")
    heartbeat.record(heartbeat.BEAT, "b")
    if seconds_ago is not None:
        # Read when the test runs: a time taken at collection ages with the suite before it.
        heartbeat.record(heartbeat.worker_role("push"), "p", at=time.time() - seconds_ago)

    status, body = _health(client)

    push = body["parts"]["pushWorker"]
    assert push["status"] == expected and push["required"] is False and push["pushAccounts"] == 1
    assert status == 200
    assert body["status"] == ("ok" if expected == "ok" else "degraded")
    assert body["parts"]["worker"]["status"] == "ok"  # the default queue's worker is its own part


def test_redis_down_is_503_and_the_parts_needing_it_are_unknown(client, settings, tmp_path):
    settings.REDIS_URL = f"redis+socket://{tmp_path / 'no-redis.sock'}"

    status, body = _health(client)

    assert status == 503
    assert body["status"] == "unavailable"
    assert body["parts"]["redis"] == {"status": "down", "required": True}
    assert body["parts"]["worker"]["status"] == "unknown"
    assert body["parts"]["pushWorker"]["status"] == "unknown"
    assert body["parts"]["database"]["status"] == "ok"


def test_root_leads_to_admin_and_view_site_works(admin_client):
    response = admin_client.get("/", follow=True)

    assert response.redirect_chain[0] == (reverse("admin:index"), 302)
    assert response.status_code == 200
    assert 'href="/">View site</a>' in response.content.decode()


def test_favicon_is_answered_quietly(client, caplog):
    with caplog.at_level(logging.WARNING):
        response = client.get("/favicon.ico")

    assert response.status_code == 204
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]


def test_database_down_is_503_and_the_parts_reading_it_are_unknown(tmp_path):
    # A process of its own whose DATABASE_URL names a port nothing listens on.
    script = (
        "import django, json; django.setup()\n"
        "from django.test import Client\n"
        "response = Client().get('/health')\n"
        "print(response.status_code, response.content.decode())\n"
    )
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "mailfathom.settings",
        "DATABASE_URL": f"postgres://nobody@127.0.0.1:{free_port()}/nothing",
        "DJANGO_SECRET_KEY": "test-health",
        "DJANGO_ALLOWED_HOSTS": "testserver",
    }
    result = subprocess.run(
        [sys.executable, "-c", script],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )

    status, _, body = result.stdout.strip().partition(" ")
    assert status == "503", result.stderr[-2000:]
    parts = json.loads(body)["parts"]
    assert parts["database"] == {"status": "down", "required": True}
    assert parts["redis"]["status"] == "ok"
    assert parts["lastSync"]["status"] == parts["embeddingBacklog"]["status"] == "unknown"
    assert parts["mailboxSignIn"] == {"status": "unknown", "required": False}


def test_the_attachment_text_backlog_counts_waiting_mail_and_outcomes_never_names(client):
    from mailbox.models import AttachmentText, Email
    from mailbox.services.store import IncomingMessage, store_messages
    from tests.mailbox.factories import mapped_folder

    folder = mapped_folder(MailAccountFactory(), "inbox")
    raw = (
        b"From: a@example.org\r\nTo: b@example.org\r\nSubject: Quarterly figures\r\n"
        b"MIME-Version: 1.0\r\nContent-Type: multipart/mixed; boundary=x\r\n\r\n--x\r\n"
        b"Content-Type: text/plain\r\n\r\nSee attached.\r\n--x\r\nContent-Type: text/csv\r\n"
        b'Content-Disposition: attachment; filename="figures-secret.csv"\r\n\r\na,b\r\n--x--\r\n'
    )
    stored = store_messages(
        folder,
        [IncomingMessage(uidvalidity=1, uid=n, size=len(raw), received_at=None, raw=raw) for n in (1, 2)],
    )
    first = Email.objects.get(pk=stored.email_ids[0])
    AttachmentText.objects.create(
        email=first, part_index=2, outcome="ok", characters=3, extracted_at=timezone.now(), engine_version=1
    )

    part = client.get(reverse("health")).json()["parts"]["attachmentTextBacklog"]

    assert part["status"] == "ok"
    assert part["pending"] == 2  # an AttachmentText row alone does not mark the email done
    assert part["outcomes"] == {"ok": 1}
    assert "figures-secret" not in json.dumps(part) and "Quarterly" not in json.dumps(part)

"""Workers and beat are seen through Redis: a real worker records itself from its own timer
for each queue it consumes; beat's publishing records beat.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from celery.signals import beat_init
from django.conf import settings

import mailfathom.celery
from mailbox import tasks as mailbox_tasks
from mailfathom.core import heartbeat
from mailfathom.core.redis_store import redis_client
from tests.support import database_url, isolated_provider_health, wait_for

ROOT = Path(__file__).resolve().parents[2]
VOID_QUEUE = "mailfathom-test-heartbeat-void"


@pytest.mark.django_db(transaction=True)
@pytest.mark.slow
def test_a_real_worker_records_itself_for_each_queue_it_consumes(tmp_path):
    # The worker counts under the test database's name, as this process does without a namespace.
    roles = [heartbeat.worker_role(q) for q in ("celery", "push")]
    redis_client().hdel(heartbeat._key(), *roles)
    log = tmp_path / "worker.log"
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "mailfathom.settings",
        "DATABASE_URL": database_url(),
        "DJANGO_SECRET_KEY": "test-worker",
        "MAILFATHOM_KEYRING": settings.MAILFATHOM_KEYRING,
    }
    command = [sys.executable, "-m", "celery", "-A", "mailfathom", "worker", "--pool", "solo"]
    command += ["--without-heartbeat", "--without-mingle", "--without-gossip", "--hostname", "beatless@test"]
    command += ["--queues", "celery,push"]
    with open(log, "ab") as output:
        worker = subprocess.Popen(command, cwd=ROOT, env=env, stdout=output, stderr=subprocess.STDOUT)
    try:
        wait_for(
            lambda: all(heartbeat.last_seen()[role].at is not None for role in roles),
            60,
            interval=0.2,
            message=lambda: "the worker recorded no heartbeat:\n" + log.read_text()[-3000:],
        )
    finally:
        worker.terminate()
        worker.wait(timeout=30)
    seen = heartbeat.last_seen()
    # Forgotten again: the test database's status page (the browser tests') must not show
    # this stopped worker as one not seen for hours.
    redis_client().hdel(heartbeat._key(), *roles)
    assert {seen[role].host for role in roles} == {"beatless@test"}
    assert seen[heartbeat.BEAT].at is None  # no beat ran


@pytest.mark.django_db
def test_beat_is_seen_when_it_publishes_and_no_other_publisher_counts(settings, monkeypatch):
    with isolated_provider_health(settings, "beat"):
        try:
            mailbox_tasks.refresh_term_stats.apply_async(queue=VOID_QUEUE)
            assert heartbeat.last_seen()[heartbeat.BEAT].at is None  # a web process published it

            monkeypatch.setattr(mailfathom.celery, "_in_beat", True)  # as beat_init sets it in beat
            mailbox_tasks.refresh_term_stats.apply_async(queue=VOID_QUEUE)

            assert heartbeat.last_seen()[heartbeat.BEAT].at is not None
        finally:
            redis_client().delete(VOID_QUEUE)


@pytest.mark.django_db
def test_beat_is_seen_as_soon_as_it_starts(settings, monkeypatch):
    monkeypatch.setattr(mailfathom.celery, "_in_beat", False)  # put back after the signal sets it
    with isolated_provider_health(settings, "beat-start"):
        assert heartbeat.last_seen()[heartbeat.BEAT].at is None

        beat_init.send(sender=None)

        assert heartbeat.last_seen()[heartbeat.BEAT].at is not None


def test_every_scheduled_task_is_a_registered_task():
    mailfathom.celery.app.loader.import_default_modules()
    names = {entry["task"] for entry in settings.CELERY_BEAT_SCHEDULE.values()}

    assert "mailbox.sample_coverage" in names
    assert names <= set(mailfathom.celery.app.tasks)

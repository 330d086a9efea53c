"""A real Celery worker process for a test: consumes from the session's Redis, writes to its database.

The worker runs the product's settings (mailfathom.settings) pointed at this test session's
database (tests use transaction=True, so what the worker commits is what the test reads).
`env` adds settings of the test's own (MAILFATHOM_IMAP_CA_FILE, say); `arguments` replace the
solo pool (the push worker's `--queues push --pool threads`, say).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

from django.conf import settings

from tests.support import database_url

ROOT = Path(__file__).resolve().parents[1]


class Worker:
    def __init__(self, log: Path, arguments: Sequence[str] = ("--pool", "solo"), **env: str) -> None:
        environment = {
            **os.environ,
            "DJANGO_SETTINGS_MODULE": "mailfathom.settings",
            "DATABASE_URL": database_url(),
            "DJANGO_SECRET_KEY": "test-worker",
            "MAILFATHOM_KEYRING": settings.MAILFATHOM_KEYRING,
            "MAILFATHOM_SYNC_LEASE_SECONDS": "10",
            "MAILFATHOM_CELERY_VISIBILITY_TIMEOUT": "5",
            **env,
        }
        environment.pop("TEST_DATABASE_URL", None)
        environment.pop("DJANGO_ALLOW_ASYNC_UNSAFE", None)  # set while a browser test runs Playwright
        self.log = log
        self.process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "celery",
                "-A",
                "mailfathom",
                "worker",
                *arguments,
                "--loglevel",
                "INFO",
                "--without-heartbeat",
                "--without-mingle",
                "--without-gossip",
            ],
            cwd=ROOT,
            env=environment,
            stdout=open(log, "ab"),
            stderr=subprocess.STDOUT,
        )

    def output(self, characters: int = 3000) -> str:
        return self.log.read_text(errors="replace")[-characters:]

    def kill(self) -> None:
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(timeout=10)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.kill()

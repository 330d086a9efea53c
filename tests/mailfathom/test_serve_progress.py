"""`make run` on an empty database keeps saying what it does until its banner.

The serve command runs as a subprocess against a database of its own, created empty for the
test on this session's server, so every migration is applied as on a first start. Each line
it prints is stamped as it arrives. The gap allowed between two lines is generous (the
ticker speaks every 3 s): what this holds is that no stretch of the start is silent, not how
fast the machine is.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

import pytest
from django.db import connection

from tests.redis_server import RedisServer
from tests.support import database_url, free_port, serve_env

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
LONGEST_SILENCE = 12.0  # seconds; the ticker speaks every 3
BANNER = "MailFathom is running."


@pytest.fixture
def empty_database():
    name = f"serve_progress_{uuid.uuid4().hex[:8]}"
    with connection.cursor() as cursor:
        cursor.execute(f'CREATE DATABASE "{name}"')
    current = connection.settings_dict["NAME"]
    yield database_url().replace(f"/{current}", f"/{name}", 1)
    with connection.cursor() as cursor:
        cursor.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def test_a_first_start_prints_a_line_every_few_seconds_until_the_banner(tmp_path, empty_database):
    broker = RedisServer(tmp_path / "redis")
    broker.start()
    serve = subprocess.Popen(
        [sys.executable, "manage.py", "serve", "--port", str(free_port())],
        cwd=ROOT,
        env=serve_env(empty_database, broker.url, tmp_path / "var"),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    lines: list[tuple[float, str]] = []

    def read() -> None:
        assert serve.stdout is not None
        for line in serve.stdout:
            lines.append((time.monotonic(), line.rstrip("\n")))

    started = time.monotonic()
    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        deadline = started + 240
        while time.monotonic() < deadline and serve.poll() is None:
            if any(BANNER in text for _, text in lines):
                break
            time.sleep(0.2)
        said = "\n".join(text for _, text in lines)
        assert any(BANNER in text for _, text in lines), said
    finally:
        serve.send_signal(signal.SIGTERM)
        try:
            serve.wait(timeout=30)
        except subprocess.TimeoutExpired:
            serve.kill()
            serve.wait(timeout=10)
        broker.stop()

    until_banner = [
        (at, text) for at, text in lines[: next(i for i, (_, t) in enumerate(lines) if BANNER in t)]
    ]
    moments = [started] + [at for at, _ in until_banner]
    gaps = [later - earlier for earlier, later in zip(moments, moments[1:], strict=False)]
    assert max(gaps) < LONGEST_SILENCE, said
    assert "Preparing the database:" in said and "The database is ready" in said
    numbered = [text for _, text in until_banner if text.strip().startswith("[")]
    total = int(numbered[0].split("/")[1].split("]")[0])
    assert len(numbered) == total > 20  # every migration said, numbered against the total
    # The banner says what is on and the one next step for an empty deployment.
    assert "ask_mail:" in said and "Drafting:" in said and "Access:" in said
    assert "Next: log in to admin and add a mail account" in said

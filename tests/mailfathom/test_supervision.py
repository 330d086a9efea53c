"""`make run` supervises: what dies is restarted, what keeps dying stops the product by name.

One test runs the serve command as a subprocess (against this session's database and a
Redis of its own), kills its worker with SIGKILL and watches it come back while the web
server keeps answering. The others drive the supervisor directly: a child failing again
and again, and the embedded PostgreSQL and Redis killed under it.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import psutil
import psycopg
import pytest

from mailfathom import embedded
from mailfathom.supervisor import ChildProcess, EmbeddedServer, GaveUp, Supervisor
from tests.redis_server import RedisServer
from tests.support import database_url, free_port, serve_env, wait_for

ROOT = Path(__file__).resolve().parents[2]


def _answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as response:  # noqa: S310 (a loopback URL)
            return response.status in (200, 503)
    except OSError as error:
        return getattr(error, "code", None) == 503  # /health answers 503 while a part is down


def _worker_pids(serve: subprocess.Popen) -> list[int]:
    found = []
    for child in psutil.Process(serve.pid).children():
        command = child.cmdline()
        if "worker" in command and "push" not in command:
            found.append(child.pid)
    return found


@pytest.mark.django_db(transaction=True)
@pytest.mark.slow
def test_a_worker_killed_under_serve_is_restarted_and_the_web_server_keeps_answering(tmp_path):
    broker = RedisServer(tmp_path / "redis")
    broker.start()
    port = free_port()
    output = tmp_path / "serve.out"
    serve = subprocess.Popen(
        [sys.executable, "manage.py", "serve", "--port", str(port)],
        cwd=ROOT,
        env=serve_env(database_url(), broker.url, tmp_path / "var"),
        stdout=open(output, "ab"),
        stderr=subprocess.STDOUT,
    )
    text = lambda: output.read_text(errors="replace")  # noqa: E731
    health = f"http://127.0.0.1:{port}/health"
    try:
        wait_for(lambda: "MailFathom is running." in text() or serve.poll() is not None, 120, interval=0.2)
        assert serve.poll() is None, text()
        worker_log = tmp_path / "var" / "log" / "worker.log"
        ready = lambda: worker_log.read_text(errors="replace").count(" ready.")  # noqa: E731
        wait_for(lambda: worker_log.exists() and ready() == 1, 60, interval=0.2, message=text)
        wait_for(lambda: _worker_pids(serve), 10, interval=0.1, message=text)
        [killed] = _worker_pids(serve)
        os.kill(killed, signal.SIGKILL)

        answered = []
        deadline = time.monotonic() + 30
        while "The worker process is running again." not in text() and time.monotonic() < deadline:
            answered.append(_answers(health))
            time.sleep(0.2)
        assert "The worker process stopped (signal SIGKILL); restarting it in 1 s" in text(), text()
        assert "The worker process is running again." in text(), text()
        assert all(answered), "the web server stopped answering while the worker was restarted"
        wait_for(lambda: _worker_pids(serve) and killed not in _worker_pids(serve), 10, interval=0.1)
        wait_for(lambda: ready() == 2, 60, interval=0.2, message=lambda: worker_log.read_text()[-3000:])
        assert serve.poll() is None and _answers(health)
    finally:
        serve.send_signal(signal.SIGTERM)
        try:
            serve.wait(timeout=30)
        except subprocess.TimeoutExpired:
            serve.kill()
            serve.wait(timeout=10)
        broker.stop()
    assert "Stopped." in text()


def test_a_child_failing_repeatedly_stops_the_product_naming_it_and_its_log(tmp_path):
    said: list[str] = []
    log = tmp_path / "broken.log"
    child = ChildProcess(
        name="broken process",
        log=str(log),
        command=[sys.executable, "-c", "raise SystemExit(3)"],
        log_file=log,
    )
    supervisor = Supervisor([child], said.append, backoff_start=0.01, max_failures=3, window=60)
    supervisor.start_all()
    with pytest.raises(GaveUp) as gave_up:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            supervisor.check()
            time.sleep(0.02)

    assert str(gave_up.value) == (
        f"The broken process failed 3 times within 60 s (last: exit code 3), so MailFathom stopped. "
        f"Look at its log: {log}"
    )
    assert said[0] == (
        "The broken process stopped (exit code 3); restarting it in 0 s (failure 1 of 3 within 60 s). "
        f"Its log: {log}"
    )
    assert said.count("The broken process is running again.") == 2


@pytest.fixture
def own_var_dir(monkeypatch):
    """An embedded default of the test's own (short path: sockets live under it)."""
    var = Path(tempfile.mkdtemp(prefix="mf-sv-"))
    monkeypatch.setenv("MAILFATHOM_VAR_DIR", str(var))
    monkeypatch.setattr(embedded, "started_here", set())
    yield var
    embedded.stop_running()
    shutil.rmtree(var, ignore_errors=True)


@pytest.mark.slow
def test_the_embedded_postgresql_and_redis_killed_are_brought_back(own_var_dir):
    params = embedded.ensure_postgres()
    embedded.ensure_redis()
    said: list[str] = []
    servers = [
        EmbeddedServer(
            name="embedded PostgreSQL",
            log="pg log",
            answers=embedded.postgres_answers,
            ensure=embedded.ensure_postgres,
        ),
        EmbeddedServer(
            name="embedded Redis",
            log="redis log",
            answers=embedded.redis_answers,
            ensure=embedded.ensure_redis,
        ),
    ]
    supervisor = Supervisor(servers, said.append, backoff_start=0.1)
    postmaster = int((own_var_dir / "postgres" / "postmaster.pid").read_text().split()[0])
    redis_pid = int((own_var_dir / "redis" / "redis.pid").read_text().strip())
    os.kill(postmaster, signal.SIGKILL)
    os.kill(redis_pid, signal.SIGKILL)

    wait_for(lambda: not embedded.postgres_answers() and not embedded.redis_answers(), 10, interval=0.05)
    deadline = time.monotonic() + 60
    while (
        len([line for line in said if line.endswith("is running again.")]) < 2 and time.monotonic() < deadline
    ):
        supervisor.check()
        time.sleep(0.05)

    assert "The embedded PostgreSQL stopped (it no longer answers); restarting it in 0 s" in said[0], said
    assert (
        "The embedded PostgreSQL is running again." in said and "The embedded Redis is running again." in said
    )
    with psycopg.connect(host=params["HOST"], user="postgres", dbname=embedded.DATABASE_NAME) as conn:
        assert conn.execute("SELECT 1").fetchone() == (1,)
    assert embedded.redis_answers()

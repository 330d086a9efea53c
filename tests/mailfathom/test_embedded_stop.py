"""`manage.py embedded stop` and `status` start nothing; `start` starts both servers."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _stop(var: Path, action: str = "stop") -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL")}
    env["MAILFATHOM_VAR_DIR"] = str(var)
    return subprocess.run(
        [sys.executable, "manage.py", "embedded", action],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_stop_with_nothing_running_starts_nothing(tmp_path):
    result = _stop(tmp_path)

    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "stopped: nothing was running"
    assert not (tmp_path / "postgres").exists() and not (tmp_path / "redis").exists()


def test_stale_pid_files_are_not_taken_for_running_servers(tmp_path):
    (tmp_path / "postgres").mkdir()
    (tmp_path / "postgres" / "postmaster.pid").write_text("999999999\n")
    (tmp_path / "redis").mkdir()
    (tmp_path / "redis" / "redis.pid").write_text("999999999\n")

    result = _stop(tmp_path)

    assert result.stdout.strip() == "stopped: nothing was running", result.stderr
    assert sorted(p.name for p in (tmp_path / "postgres").iterdir()) == ["postmaster.pid"]


def test_status_starts_nothing_and_start_starts_both():
    var = Path(tempfile.mkdtemp(prefix="mf-emb-"))  # short: the sockets live under it
    try:
        before = _stop(var, "status")
        assert before.stdout.splitlines()[1:] == [
            "database: embedded PostgreSQL, stopped",
            "redis: embedded Redis, stopped",
        ]
        assert not (var / "postgres").exists(), before.stderr

        started = _stop(var, "start")
        assert started.stdout.strip() == "started: PostgreSQL, Redis", started.stderr
        again = _stop(var, "start")
        assert again.stdout.strip() == "started: both were running", again.stderr
        running = _stop(var, "status")
        assert running.stdout.splitlines()[1:] == [
            "database: embedded PostgreSQL, running",
            "redis: embedded Redis, running",
        ]
    finally:
        assert _stop(var).stdout.strip() == "stopped: Redis, PostgreSQL"
        shutil.rmtree(var, ignore_errors=True)

"""`manage.py embedded stop` stops what runs and starts nothing to do it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _stop(var: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL")}
    env["MAILFATHOM_VAR_DIR"] = str(var)
    return subprocess.run(
        [sys.executable, "manage.py", "embedded", "stop"],
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

"""The period ledger is one count for every process: in Redis, atomic, expiring, closed when unreachable."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
import redis

from answering.ledger import (
    EXPIRY_MARGIN_SECONDS,
    SPEND_REFUSED,
    PeriodLedger,
    _redis,
    ledger_namespace,
    period_ledger,
)
from mailfathom.core.errors import CAPABILITY_UNAVAILABLE as LEDGER_UNAVAILABLE
from mailfathom.core.errors import MailFathomError
from tests.support import database_url

ROOT = Path(__file__).resolve().parents[2]

# One process of the deployment: waits for the common start instant, then asks for `tries`
# places through period_ledger() (what ask_mail calls), charging one token per admitted run.
# Django is set up as any process of the deployment sets it up, from its environment.
_PROCESS = """
import json, sys, time
import django
django.setup()
from django.conf import settings
settings.PROVIDER_HEALTH_NAMESPACE = sys.argv[1]  # the test's namespace, as its fixture would set it
from answering.ledger import period_ledger
from mailfathom.core.errors import MailFathomError
start_at, tries = float(sys.argv[2]), int(sys.argv[3])
while time.time() < start_at:
    time.sleep(0.001)
admitted, refused = 0, []
for _ in range(tries):
    try:
        period_ledger().admit()
        period_ledger().charge(1)
        admitted += 1
    except MailFathomError as error:
        refused.append(error.code)
print(json.dumps({"admitted": admitted, "refused": refused}))
"""


class Clock:
    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def namespace(settings) -> str:
    settings.PROVIDER_HEALTH_NAMESPACE = f"test-shared-ledger-{uuid.uuid4().hex}"
    return settings.PROVIDER_HEALTH_NAMESPACE


def _process_env(**overrides: str) -> dict[str, str]:
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "mailfathom.settings",
        "DATABASE_URL": database_url(),
        "DJANGO_SECRET_KEY": "test-shared-ledger",
        "MAILFATHOM_EMBEDDING_PROVIDER": "none",
    }
    env.pop("TEST_DATABASE_URL", None)
    env.update(overrides)
    return env


@pytest.mark.django_db
def test_three_processes_admit_exactly_the_periods_runs_in_total(namespace, mailfathom_settings):
    mailfathom_settings(answering_max_runs_per_period=30)
    env = _process_env(MAILFATHOM_ANSWERING_MAX_RUNS_PER_PERIOD="30")
    start_at = str(time.time() + 8)  # every process is set up and waiting by then
    processes = [
        subprocess.Popen(
            [sys.executable, "-c", _PROCESS, namespace, start_at, "20"],
            cwd=ROOT,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        for _ in range(3)
    ]
    results = []
    for process in processes:
        out, err = process.communicate(timeout=120)
        assert process.returncode == 0, err.decode(errors="replace")[-2000:]
        results.append(json.loads(out.decode().strip().splitlines()[-1]))

    assert sum(result["admitted"] for result in results) == 30
    assert sorted(code for result in results for code in result["refused"]) == [SPEND_REFUSED] * 30
    spent = period_ledger().spend()  # this process reads the same count
    assert (spent.runs, spent.tokens) == (30, 30)
    with pytest.raises(MailFathomError) as refused:
        period_ledger().admit()
    assert refused.value.code == SPEND_REFUSED


def test_a_window_is_one_hash_that_expires_after_its_window(namespace):
    ledger = PeriodLedger(
        max_runs=5, max_tokens=100, period_seconds=3600, clock=Clock(7200.0 + 3000), namespace=namespace
    )
    ledger.admit()
    ledger.charge(7)

    key = f"mailfathom:answering-period:{namespace}:3600:7200"
    assert _redis().hgetall(key) == {b"runs": b"1", b"tokens": b"7"}
    assert 0 < _redis().ttl(key) <= 600 + EXPIRY_MARGIN_SECONDS  # 600 s left of the window
    _redis().delete(key)


def test_an_unreachable_redis_refuses_new_questions_with_56001_and_keeps_a_run_going(tmp_path):
    # A real client pointed at a socket nothing listens on: Redis is simply not there.
    absent = redis.Redis(unix_socket_path=str(tmp_path / "absent.sock"), socket_timeout=1)
    ledger = PeriodLedger(
        max_runs=5, max_tokens=100, period_seconds=3600, namespace="unreachable", client=lambda: absent
    )

    with pytest.raises(MailFathomError) as refused:
        ledger.admit()
    assert refused.value.code == LEDGER_UNAVAILABLE
    assert "cannot right now" in refused.value.message
    ledger.charge(10)  # a run already admitted is not failed by its bookkeeping


@pytest.mark.django_db
def test_without_a_namespace_setting_the_count_is_kept_per_database(settings):
    settings.PROVIDER_HEALTH_NAMESPACE = ""
    name = settings.DATABASES["default"]["NAME"]
    namespace = ledger_namespace()
    assert namespace.startswith(f"{name}:") and namespace.removeprefix(f"{name}:").isdigit()

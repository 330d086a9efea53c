"""The period ledger holds across the processes of a deployment: two uvicorn workers and a third process.

One uvicorn with `--workers 2` serves /mcp (ask_mail against the scripted OpenAI-compatible
server) with a small MAILFATHOM_ANSWERING_MAX_RUNS_PER_PERIOD; client threads ask more
questions than that over /mcp with the real `mcp` client while a third process takes places
through answering.ledger directly, as a Celery worker of the deployment would. No Celery
task spends from the ledger yet, so the third process is a plain Django process calling
`period_ledger().admit()`: the same call, the same settings, the same Redis.

Which worker served a request is read from uvicorn's access log, formatted here (through
uvicorn's own `--log-config`, no product code) with the process id of the worker that
wrote each line. docs/operations/answering.md says why the count is shared.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import threading
import time
from collections import Counter

import pytest

from answering.ledger import SPEND_REFUSED, _redis, ledger_namespace
from tests.mcp.answering_support import answering_env, obedient_world
from tests.mcp.conftest import call_tool, error_code, payload
from tests.mcp.servers import ROOT, server_env, start_server
from tests.support import wait_for

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

QUESTION = "What did the insurer finally agree to pay?"
MAX_RUNS = 4
THREADS = 4
QUESTIONS_PER_THREAD = 3  # 12 questions over /mcp, three times the allowance
THIRD_PROCESS_TRIES = MAX_RUNS
# A week-long period: its own Redis key (no other test counts in it), and a window boundary
# the test can step around (see _away_from_a_window_boundary).
PERIOD_SECONDS = 604800

# uvicorn's own logging, with the worker's process id on every line and the access log on
# stderr (the file the test reads) instead of stdout.
LOG_CONFIG = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {
        "default": {"format": "%(process)d %(levelname)s %(name)s %(message)s"},
        "access": {
            "()": "uvicorn.logging.AccessFormatter",
            "fmt": '%(process)d access %(client_addr)s "%(request_line)s" %(status_code)s',
            "use_colors": False,
        },
    },
    "handlers": {
        "default": {"class": "logging.StreamHandler", "formatter": "default", "stream": "ext://sys.stderr"},
        "access": {"class": "logging.StreamHandler", "formatter": "access", "stream": "ext://sys.stderr"},
    },
    "loggers": {
        "uvicorn": {"handlers": ["default"], "level": "INFO", "propagate": False},
        "uvicorn.error": {"level": "INFO"},
        "uvicorn.access": {"handlers": ["access"], "level": "INFO", "propagate": False},
    },
}
WORKER_STARTED = re.compile(r"^(\d+) INFO uvicorn\.error Started server process \[(\d+)\]$", re.MULTILINE)
MCP_POST = re.compile(r'^(\d+) access 127\.0\.0\.1:(\d+) "POST /mcp HTTP/1\.1" 2\d\d ', re.MULTILINE)

# The stand-in for a Celery worker: Django set up from the deployment's environment, then
# `tries` admissions through period_ledger() from the common start instant on, spread out
# so they interleave with the questions arriving over /mcp.
_THIRD_PROCESS = """
import json, sys, time
import django
django.setup()
from answering.ledger import period_ledger
from mailfathom.core.errors import MailFathomError
start_at, tries = float(sys.argv[1]), int(sys.argv[2])
while time.time() < start_at:
    time.sleep(0.001)
admitted, refused = 0, []
for _ in range(tries):
    try:
        period_ledger().admit()
        admitted += 1
    except MailFathomError as error:
        refused.append(error.code)
    time.sleep(0.15)
print(json.dumps({"admitted": admitted, "refused": refused}))
"""


@pytest.fixture
def world(settings, scripted):
    """The mailbox, embedded with the scripted endpoint the workers query with, in the
    namespaces (health, ledger) the workers use: the test database's own."""
    settings.PROVIDER_HEALTH_NAMESPACE = ""
    with obedient_world(settings, scripted) as built:
        yield built


def _away_from_a_window_boundary() -> float:
    """Return the start of the current period once at least three minutes of it remain.

    A test straddling two periods would see two allowances; it waits out the (rare) last
    minutes of a week rather than count wrong.
    """
    now = time.time()
    left = PERIOD_SECONDS - now % PERIOD_SECONDS
    if left < 180:
        time.sleep(left + 1)
        now = time.time()
    return now - now % PERIOD_SECONDS


def _ask(server, key: str, start_at: float, outcomes: list[object], lock: threading.Lock) -> None:
    while time.time() < start_at:
        time.sleep(0.001)
    for _ in range(QUESTIONS_PER_THREAD):
        result = call_tool(server, key, "ask_mail", {"question": QUESTION})
        outcome: object = "answered" if not result.is_error else error_code(result)
        if outcome == "answered":
            assert payload(result)["citations"], "an admitted question is answered from the mail"
        with lock:
            outcomes.append(outcome)


def test_two_uvicorn_workers_and_a_third_process_admit_exactly_the_periods_runs_in_total(
    world, scripted, api_key, tmp_path
):
    namespace = ledger_namespace()  # the test database's: what every process here counts in
    period_start = _away_from_a_window_boundary()
    key = f"mailfathom:answering-period:{namespace}:{PERIOD_SECONDS}:{int(period_start)}"
    _redis().delete(key)  # a previous run against a reused database counted in this window
    settings_env = {
        "MAILFATHOM_ANSWERING_MAX_RUNS_PER_PERIOD": str(MAX_RUNS),
        "MAILFATHOM_ANSWERING_AGGREGATE_PERIOD": str(PERIOD_SECONDS),
    }
    log_config = tmp_path / "uvicorn-log.json"
    log_config.write_text(json.dumps(LOG_CONFIG))
    server = start_server(
        tmp_path / "server.log",
        workers=2,
        log_config=log_config,
        **settings_env,
        **answering_env(scripted),
    )
    try:
        wait_for(
            lambda: len(WORKER_STARTED.findall(server.log())) == 2,
            seconds=90,
            message=lambda: "two workers did not start: " + server.log()[-3000:],
        )
        workers = {int(pid) for _, pid in WORKER_STARTED.findall(server.log())}

        start_at = time.time() + 8  # the third process has set Django up by then
        third = subprocess.Popen(
            [sys.executable, "-c", _THIRD_PROCESS, str(start_at), str(THIRD_PROCESS_TRIES)],
            cwd=ROOT,
            env=server_env(**settings_env),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        outcomes: list[object] = []
        lock = threading.Lock()
        threads = [
            threading.Thread(target=_ask, args=(server, api_key, start_at, outcomes, lock))
            for _ in range(THREADS)
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=180)
        out, err = third.communicate(timeout=120)
        log = server.log()
    finally:
        server.stop()
    assert not any(thread.is_alive() for thread in threads)
    assert third.returncode == 0, err.decode(errors="replace")[-2000:]
    by_third = json.loads(out.decode().strip().splitlines()[-1])

    counted = Counter(outcomes)
    assert sum(counted.values()) == THREADS * QUESTIONS_PER_THREAD
    assert set(counted) <= {"answered", SPEND_REFUSED}, counted  # nothing failed otherwise
    assert counted["answered"] + by_third["admitted"] == MAX_RUNS, (counted, by_third)
    assert by_third["refused"] == [SPEND_REFUSED] * (THIRD_PROCESS_TRIES - by_third["admitted"])
    # Both workers served questions: each client session is one keep-alive connection (a
    # client port), and each connection is accepted by one worker.
    servers_of = {(int(pid), port) for pid, port in MCP_POST.findall(log)}
    serving = {pid for pid, _ in servers_of}
    assert serving <= workers and len(serving) == 2, (workers, Counter(pid for pid, _ in servers_of))
    _redis().delete(key)

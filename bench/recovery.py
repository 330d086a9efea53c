"""Recovery times with the defaults: a Redis outage, and a worker killed mid-backfill.

  (a) A 15 s Redis outage under a default worker (prefork, 2 slots) and a push worker
      (threads) holding an IDLE watcher: the time from Redis answering again to a run
      queued at that moment having stored a new message ("synchronization running again"),
      and to a message appended then arriving through IDLE. The anchor is the same run
      queued with no outage, so the figure is what the outage added.
  (b) The default worker killed with SIGKILL mid-backfill under the supervisor `make run`
      uses, with beat running: the time from the kill to the folder storing mail again,
      with the defaults (lease 300 s, visibility timeout 3600 s, poll interval 300 s).

Everything runs against a Redis of the bench's own, a private Dovecot (tests/dovecot.py)
and a scratch database, never the product's. It prints numbers; docs/benchmarks.md keeps
them. `--outage SECONDS`, `--rounds N`, `--skip-kill` change what it measures.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
BENCH_DATABASE = "mailfathom_bench_recovery"
KILL_LIMIT_SECONDS = 900.0
BACKFILL = 5000  # messages of about 2 KB: a backfill that lasts long enough to be killed


def _message(n: int) -> bytes:
    return (
        f"From: a@example.org\r\nSubject: recovery {n}\r\nMessage-ID: <r{n}@x>\r\n\r\nbody {n}\r\n".encode()
    )


def _wait(condition, seconds: float, interval: float = 0.05) -> float | None:
    """Seconds until `condition()` held, or None if it did not within `seconds`."""
    started = time.monotonic()
    while time.monotonic() - started < seconds:
        if condition():
            return time.monotonic() - started
        time.sleep(interval)
    return None


def _defaults_env(broker_url: str, var: Path) -> dict[str, str]:
    # tests/celery_worker shortens the lease and the visibility timeout; put the defaults back.
    return {
        "REDIS_URL": broker_url,
        "MAILFATHOM_SYNC_LEASE_SECONDS": "300",
        "MAILFATHOM_CELERY_VISIBILITY_TIMEOUT": "3600",
        "MAILFATHOM_VAR_DIR": str(var),
    }


def measure_outage(server, broker, var: Path, outage: float, rounds: int) -> None:
    from mailbox.models import Email, Folder
    from mailbox.sync.engine import synchronize_account
    from mailbox.tasks import sync_account, watch_folder
    from mailfathom.celery import app
    from tests.celery_worker import Worker
    from tests.mailbox.imap_support import account_for, add_user

    def publish(task, *args, **options) -> None:
        with app.connection_for_write(broker.url) as connection:
            task.apply_async(args, connection=connection, **options)

    pushed_user, polled_user = add_user(server), add_user(server)
    pushed = account_for(pushed_user, sync_mode="push", account_id="pushed", display_name="Pushed")
    polled = account_for(polled_user, account_id="polled", display_name="Polled")
    synchronize_account(pushed.pk)
    synchronize_account(polled.pk)
    pushed_inbox = Folder.objects.get(account=pushed, remote_name="INBOX")
    polled_inbox = Folder.objects.get(account=polled, remote_name="INBOX")
    env = _defaults_env(broker.url, var)
    default = Worker(var / "default.log", ("--pool", "prefork", "--concurrency", "2"), **env)
    push = Worker(var / "push.log", ("--queues", "push", "--pool", "threads", "--hostname", "push@%h"), **env)
    counter = 0
    try:
        publish(watch_folder, pushed_inbox.pk, queue="push")
        _wait(lambda: "ready." in default.output() and "Task mailbox.watch_folder" in push.output(), 120)
        time.sleep(2)  # the watcher caught up and idles

        def queued_run_stores(label: str) -> float | None:
            nonlocal counter
            counter += 1
            polled_user.append("INBOX", [_message(counter)])
            before = Email.objects.filter(folder=polled_inbox).count()
            publish(sync_account, polled.pk, force=True)
            took = _wait(lambda: Email.objects.filter(folder=polled_inbox).count() > before, 120)
            return took

        for round_number in range(1, rounds + 1):
            anchor = queued_run_stores("anchor")
            broker.stop()
            stopped_at = time.monotonic()
            time.sleep(outage)
            broker.start()
            back_after = time.monotonic() - stopped_at
            counter += 1
            idle_before = Email.objects.filter(folder=pushed_inbox).count()
            pushed_user.append("INBOX", [_message(counter)])
            queued = queued_run_stores("after")
            idle = _wait(
                lambda before=idle_before: Email.objects.filter(folder=pushed_inbox).count() > before, 60
            )
            alive = default.process.poll() is None and push.process.poll() is None
            print(
                f"outage round {round_number}: Redis away {back_after:.1f} s; after it answered, "
                f"a queued run stored mail in {queued:.2f} s (same run without an outage: {anchor:.2f} s), "
                f"IDLE delivered in {idle:.2f} s; workers alive: {alive}"
                if queued is not None and idle is not None and anchor is not None
                else f"outage round {round_number}: did not recover within the limit (alive: {alive})"
            )
            time.sleep(3)
    finally:
        default.stop()
        push.process.kill()


def measure_kill(server, broker, var: Path) -> None:
    from mailbox.models import Email, Folder
    from mailfathom.management.commands.serve import child_commands
    from mailfathom.supervisor import ChildProcess, Supervisor
    from tests.mailbox.imap_support import account_for, add_user
    from tests.support import database_url

    user = add_user(server)
    padding = "x" * 2000
    user.append("INBOX", [_message(100_000 + n) + padding.encode() for n in range(BACKFILL)])
    account = account_for(user, account_id="killed", display_name="Killed")
    env = {
        **os.environ,
        **_defaults_env(broker.url, var),
        "DATABASE_URL": database_url(),
        "DJANGO_SECRET_KEY": "bench-recovery-" + "x" * 40,
        "MAILFATHOM_KEYRING": __import__("django.conf").conf.settings.MAILFATHOM_KEYRING,
    }
    os.environ.update(env)  # the supervisor's children inherit it
    # The worker and beat exactly as `make run` starts them.
    commands = child_commands(sys.executable, "127.0.0.1", 0, str(var / "beat-schedule"))
    worker = ChildProcess(
        name="worker process",
        log=str(var / "kill-worker.log"),
        command=commands["worker"],
        log_file=var / "kill-worker.log",
    )
    beat = ChildProcess(
        name="beat process",
        log=str(var / "kill-beat.log"),
        command=commands["beat"],
        log_file=var / "kill-beat.log",
    )
    supervisor = Supervisor([worker, beat], lambda line: print("  supervisor:", line))
    inbox = lambda: Email.objects.filter(account=account, folder__remote_name="INBOX").count()  # noqa: E731
    try:
        supervisor.start_all()
        started = _wait(lambda: inbox() >= 100, 180)  # beat's first sync_due_accounts queues the backfill
        if started is None:
            print("kill: the backfill never started")
            return
        assert worker.process is not None
        os.kill(worker.process.pid, signal.SIGKILL)
        killed_at = time.monotonic()
        at_kill = inbox()
        time.sleep(1.0)
        stored_then = inbox()
        resumed = None
        while time.monotonic() - killed_at < KILL_LIMIT_SECONDS:
            supervisor.check()
            if inbox() > stored_then:
                resumed = time.monotonic() - killed_at
                break
            time.sleep(0.5)
        folder = Folder.objects.get(account=account, remote_name="INBOX")
        print(
            f"kill: worker killed at {at_kill} of {BACKFILL} stored; the folder stored mail again "
            f"{resumed:.0f} s later (lease then expiring at {folder.lease_expires_at})"
            if resumed is not None
            else f"kill: the folder did not resume within {KILL_LIMIT_SECONDS:.0f} s ({stored_then} stored)"
        )
    finally:
        supervisor.stop_children(10)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--database", default=BENCH_DATABASE)
    parser.add_argument("--outage", type=float, default=15.0, help="seconds Redis is away (default 15)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--skip-kill", action="store_true", help="leave out (b), which takes about 6 minutes")
    args = parser.parse_args()
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))
    sys.path.insert(0, str(REPO))
    os.environ.setdefault("MAILFATHOM_KEYRING", "Y2hhbmdlLW1lLXRoaXMtaXMtYS10ZXN0LWtleS0wMDA=")
    from bench.sync import drop_database, migrated_database, setup_django

    setup_django(args.database)
    from tests.dovecot import running_dovecot
    from tests.redis_server import RedisServer

    migrated_database(args.database)
    var = Path(tempfile.mkdtemp(prefix="mf-bench-recovery-"))
    broker = RedisServer(var / "redis")
    try:
        broker.start()
        with running_dovecot(Path(tempfile.mkdtemp(prefix="mf-bench-dovecot-"))) as server:
            print(f"load average before measuring: {', '.join(f'{v:.2f}' for v in os.getloadavg())}")
            measure_outage(server, broker, var, args.outage, args.rounds)
            if not args.skip_kill:
                measure_kill(server, broker, var)
    finally:
        broker.stop()
        drop_database(args.database)
    print(f"logs: {var}")


if __name__ == "__main__":
    main()

"""The System status page at 20 accounts and 200 folders, against a trivial admin page.

    .venv/bin/python bench/status.py [--accounts 20] [--folders-per-account 10]
                                     [--emails-per-folder 1000] [--rounds 30] [--keep]

Fills a scratch database (mailfathom_status_bench, on the product's server, never its
database) with the accounts, their mapped folders in every state the page tells apart
(idle, synchronizing with a backfill under way, backing off, failing, never run), the
emails (through generate_series, 200,000 by default), 14 days of coverage samples, and
heartbeats in Redis under a namespace of its own. It then times, through Django's test
client with a logged-in superuser (the whole stack: middleware, session, the use case,
the template), the status page, its refresh fragment, and two anchors in the same run:
the admin's password-change form (a trivial admin page: same middleware, session and
base template, no query of ours) and a bare `SELECT 1`. It prints the median and the
95th percentile of each, the Python CPU the request took in this process (the rest of the
wall time is PostgreSQL's work and waiting for a core), and the ratios. The target is the
page under 300 ms. Results go to docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from sync import drop_database, migrated_database, setup_django

DATABASE = "mailfathom_status_bench"
NAMESPACE = "bench-status"


def fill(accounts: int, folders_per_account: int, emails_per_folder: int) -> int:
    """Create the accounts, folders and emails; return how many emails were inserted."""
    from datetime import timedelta

    from django.db import connection
    from django.utils import timezone

    from accounts.models import FolderMapping, MailAccount
    from mailbox.models import CoverageSample, Email, Folder

    now = timezone.now()
    folders = []
    for a in range(accounts):
        account = MailAccount.objects.create(
            account_id=f"bench-{a:02d}",
            display_name=f"Bench account {a:02d}",
            imap_host="127.0.0.1",
            username=f"user{a}",
            sync_mode="push" if a % 4 == 0 else "polling",
        )
        for f in range(folders_per_account):
            mapping = FolderMapping.objects.create(
                account=account, alias=f"folder-{f:02d}", remote_name=f"F{f}"
            )
            if a == accounts - 1 and f >= folders_per_account // 2:
                continue  # half of the last account's folders were never synchronized: no row
            state: dict[str, object] = {
                "last_committed_at": now - timedelta(seconds=30 + f),
                "server_message_count": emails_per_folder,
                "run_started_at": now - timedelta(minutes=5),
                "run_stored": 0,
            }
            if f == 0:  # a backfill under way
                state.update(
                    lease_token=uuid.uuid4(),
                    lease_expires_at=now + timedelta(minutes=5),
                    server_message_count=emails_per_folder * 3,
                    run_stored=emails_per_folder,
                )
            elif f == 1 and a % 3 == 0:
                state.update(
                    last_failure_code=61002, consecutive_failures=2, backoff_until=now + timedelta(minutes=4)
                )
            elif f == 2 and a % 5 == 0:
                state.update(
                    last_failure_code=61008, consecutive_failures=1, backoff_until=now - timedelta(minutes=1)
                )
            folders.append(
                Folder.objects.create(account=account, mapping=mapping, remote_name=f"F{f}", **state)
            )

    email = Email._meta.db_table
    with connection.cursor() as cursor:
        for folder in folders:
            cursor.execute(
                f"""
                INSERT INTO {email} (id, account_id, folder_id, uidvalidity, uid, message_id, in_reply_to,
                    "references", subject, received_at, sender_address, sender_name, size_bytes, flags,
                    flags_observed, direction, is_bulk, encrypted, unverified_signature, unexpanded_tnef,
                    availability, parse_defects, text_body, embedded, participants_text, synced_at,
                    is_list_mail, attachment_text)
                SELECT gen_random_uuid(), %s, %s, 1, n, '', '', '{{}}', 'bench ' || n,
                    now() - n * interval '7 minutes', '', '', 2000, '{{}}', true, 'incoming', false,
                    false, false, false, 'available', '{{}}', 'body', n %% 3 <> 0, '',
                    now() - (n %% 14) * interval '1 day', false, ''
                FROM generate_series(1, %s) AS n
                """,
                [folder.account_id, folder.pk, emails_per_folder],
            )
    # As autovacuum leaves a table in steady use: statistics current and the visibility map
    # set, so the counts can be index-only scans.
    with connection.cursor() as cursor:
        cursor.execute(f"VACUUM (ANALYZE) {email}")
        cursor.execute(f"VACUUM (ANALYZE) {Folder._meta.db_table}")

    total = len(folders) * emails_per_folder
    samples = [
        CoverageSample(
            taken_at=now - timedelta(minutes=5 * n),
            emails=total,
            embeddable=total,
            embedded=max(0, (total * 2) // 3 - n * 10),
        )
        for n in range(14 * 24 * 12)
    ]
    CoverageSample.objects.bulk_create(samples)
    return total


def timings(work: Callable[[], object], rounds: int) -> tuple[list[float], list[float]]:
    """Wall-clock and this process's CPU milliseconds of each round (after one warm-up)."""
    work()  # warm: templates compiled, connection open
    wall, cpu = [], []
    for _ in range(rounds):
        started, started_cpu = time.perf_counter(), time.process_time()
        work()
        wall.append((time.perf_counter() - started) * 1000)
        cpu.append((time.process_time() - started_cpu) * 1000)
    return wall, cpu


def describe(label: str, measured: tuple[list[float], list[float]]) -> float:
    wall, cpu = measured
    median = statistics.median(wall)
    p95 = sorted(wall)[max(0, int(len(wall) * 0.95) - 1)]
    print(
        f"{label:<38} median {median:7.1f} ms   p95 {p95:7.1f} ms   "
        f"(Python CPU {statistics.median(cpu):6.1f} ms)"
    )
    return median


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--accounts", type=int, default=20)
    parser.add_argument("--folders-per-account", type=int, default=10)
    parser.add_argument("--emails-per-folder", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--keep", action="store_true", help="leave the scratch database for another run")
    args = parser.parse_args()

    setup_django(DATABASE)
    from django.conf import settings
    from django.contrib.auth import get_user_model
    from django.db import connection
    from django.test import Client

    from mailfathom.core import heartbeat

    settings.ALLOWED_HOSTS = ["testserver"]
    settings.PROVIDER_HEALTH_NAMESPACE = NAMESPACE
    version = migrated_database(DATABASE)
    try:
        print(f"PostgreSQL {version}; {os.cpu_count()} cores; load average {os.getloadavg()}")
        started = time.perf_counter()
        emails = fill(args.accounts, args.folders_per_account, args.emails_per_folder)
        folders = args.accounts * args.folders_per_account
        print(
            f"filled {args.accounts} accounts, {folders} folders, {emails:,} emails "
            f"in {time.perf_counter() - started:.1f} s"
        )
        heartbeat.record(heartbeat.worker_role("celery"), "bench")
        heartbeat.record(heartbeat.BEAT, "bench")

        client = Client()
        client.force_login(get_user_model().objects.create_superuser("bench", password=None))

        def page(url: str) -> Callable[[], object]:
            def get() -> object:
                response = client.get(url)
                if response.status_code != 200:
                    raise SystemExit(f"{url} answered {response.status_code}")
                return response

            return get

        def select_one() -> object:
            with connection.cursor() as cursor:
                cursor.execute("SELECT 1")
                return cursor.fetchone()

        anchor = describe("anchor: SELECT 1", timings(select_one, args.rounds))
        trivial = describe(
            "anchor: admin password-change page", timings(page("/admin/password_change/"), args.rounds)
        )
        status = describe("System status page", timings(page("/admin/status/"), args.rounds))
        live = describe("System status refresh fragment", timings(page("/admin/status/live/"), args.rounds))
        print(
            f"status page / trivial admin page: {status / trivial:.1f}x; "
            f"fragment / trivial admin page: {live / trivial:.1f}x; "
            f"status page / SELECT 1: {status / anchor:.0f}x"
        )
        print(
            f"target: the page under 300 ms -> {'met' if status < 300 else 'NOT met'} "
            f"({status:.0f} ms median)"
        )
        print(f"load average after: {os.getloadavg()}")
    finally:
        if not args.keep:
            drop_database(DATABASE)


if __name__ == "__main__":
    main()

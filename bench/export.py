"""Compliance export at length: rows per second and peak memory, against PostgreSQL's own COPY.

    python bench/export.py [--rows 100000] [--chunk-rows 2000] [--keep]

Fills a scratch database (mailfathom_export_bench, on the product's server, never its
database) with `--rows` API tokens through generate_series, then streams them with
audit.api.export as CSV and as JSON Lines, twice each: once timed (rows/s), once under
tracemalloc (peak growth of Python memory above the start). The anchor is `COPY ... TO
STDOUT WITH CSV` of the same columns read through psycopg: the rate nothing built on the
ORM can beat; the ratio says what the Python side costs. The bounded check inside
`make test` is tests/audit/test_api_export.py. Results go to docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(1, str(Path(__file__).resolve().parent.parent))  # tests.factories, for the trail
from sync import _server_connection, drop_database, migrated_database, setup_django

DATABASE = "mailfathom_export_bench"
MB = 1_000_000
COLUMNS = "id, name, prefix, created_at, last_used_at, revoked_at"


def fill(rows: int) -> None:
    from django.contrib.auth import get_user_model
    from django.db import connection

    user = get_user_model().objects.create_user(username="bench", password=None)
    with connection.cursor() as cursor:
        cursor.execute("TRUNCATE audit_apitoken CASCADE")
        cursor.execute(
            """
            INSERT INTO audit_apitoken (name, prefix, token_hash, created_by_id, created_at)
            SELECT 'token ' || n, 'mfa_' || n, lpad(n::text, 64, '0'), %s, now() - n * interval '1 second'
            FROM generate_series(1, %s) AS n
            """,
            [user.pk, rows],
        )
        cursor.execute("ANALYZE audit_apitoken")


def drain(fmt: str) -> tuple[int, int]:
    """Stream every token as `fmt` through the export; return (lines, bytes) written to nowhere."""
    from django.test import RequestFactory

    from audit.api import export
    from audit.api.views import TOKEN_EXPORT
    from audit.api_tokens import ApiToken

    request = RequestFactory().get("/api/tokens/export/")
    response = export.stream(request, ApiToken.objects.order_by("id"), TOKEN_EXPORT, fmt)
    # The chunk size comes from MAILFATHOM_API_EXPORT_CHUNK_ROWS, which main() sets.
    lines = size = 0
    for block in response.streaming_content:
        lines += block.count(b"\n")
        size += len(block)
    return lines, size


def fill_trail(rows: int) -> None:
    """`rows` answering-trail entries of one account, each naming two emails (the first cited)."""
    from django.db import connection

    from audit.models import AnsweringRunEmail, AnsweringRunEntry
    from mailbox.models import Email
    from tests.factories import MailAccountFactory
    from tests.mailbox.factories import EmailFactory, mapped_folder

    account = MailAccountFactory(account_id="bench", answering_audit_enabled=True)
    folder = mapped_folder(account, "inbox")
    first, second = EmailFactory(folder=folder), EmailFactory(folder=folder)
    entries, emails = AnsweringRunEntry._meta.db_table, AnsweringRunEmail._meta.db_table
    assert Email.objects.filter(pk__in=[first.pk, second.pk]).count() == 2
    with connection.cursor() as cursor:
        cursor.execute(
            f"""
            INSERT INTO {entries} (run_id, account_id, chat_alias, instruction_version, started_at,
                                   ended_at, outcome, retrieval_ceiling_reached, relevance_fell_back,
                                   requester_kind, requester, requester_owner, client_name)
            SELECT md5(n::text)::uuid, %s, 'chat', 'v1', now() - n * interval '1 second',
                   now() - n * interval '1 second', 'answered', false, false, '', '', '', ''
            FROM generate_series(1, %s) AS n
            """,
            [account.pk, rows],
        )
        cursor.execute(
            f"""
            INSERT INTO {emails} (entry_id, email_id, position, cited)
            SELECT entry.id, pick.email_id, pick.position, pick.position = 0
            FROM {entries} AS entry
            CROSS JOIN (VALUES (%s::uuid, 0), (%s::uuid, 1)) AS pick(email_id, position)
            """,
            [str(first.pk), str(second.pk)],
        )
        cursor.execute(f"ANALYZE {entries}; ANALYZE {emails}")


def drain_trail(fmt: str) -> tuple[int, int]:
    """Stream every answering-trail entry as the /api/answering-runs/export/ route does."""
    from django.test import RequestFactory

    from audit.api import export
    from audit.api.trails import ANSWERING_EXPORT, answering_export_rows
    from audit.models import AnsweringRunEntry

    request = RequestFactory().get("/api/answering-runs/export/")
    selected = answering_export_rows(AnsweringRunEntry.objects.all())
    response = export.stream(request, selected, ANSWERING_EXPORT, fmt)
    lines = size = 0
    for block in response.streaming_content:
        lines += block.count(b"\n")
        size += len(block)
    return lines, size


def anchor() -> tuple[int, int]:
    from django.conf import settings

    lines = size = 0
    with _server_connection(settings.DATABASES["default"]["NAME"]) as conn, conn.cursor() as cursor:
        query = f"COPY (SELECT {COLUMNS} FROM audit_apitoken ORDER BY id) TO STDOUT WITH CSV HEADER"
        with cursor.copy(query) as copy:
            for block in copy:
                lines += bytes(block).count(b"\n")
                size += len(block)
    return lines, size


def timed(work: Callable[[], tuple[int, int]]) -> tuple[float, int, int]:
    started = time.perf_counter()
    lines, size = work()
    return time.perf_counter() - started, lines, size


def peak(work: Callable[[], tuple[int, int]]) -> float:
    tracemalloc.start()
    try:
        baseline = tracemalloc.get_traced_memory()[0]
        work()
        return (tracemalloc.get_traced_memory()[1] - baseline) / MB
    finally:
        tracemalloc.stop()


def measure_formats(
    label: str, drain: Callable[[str], tuple[int, int]], expected: int, anchor_rate: float | None = None
) -> None:
    """Time `drain` as CSV and as JSON Lines, check it gave `expected` rows, print rate and memory growth."""
    for fmt in ("csv", "jsonl"):
        seconds, lines, size = timed(lambda fmt=fmt: drain(fmt))
        rows = lines - 1 if fmt == "csv" else lines  # the CSV's header line is not a row
        if rows != expected:
            raise SystemExit(f"{label}{fmt}: exported {rows} rows, expected {expected}")
        growth = peak(lambda fmt=fmt: drain(fmt))
        rate = rows / seconds
        versus = f" ({rate / anchor_rate:.2f} of COPY)" if anchor_rate else ""
        print(
            f"{label}export {fmt}: {rows} rows, {size / MB:.1f} MB, {seconds:.2f} s = {rate:,.0f} rows/s"
            f"{versus}; peak Python memory growth {growth:.1f} MB (tracemalloc)"
        )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--chunk-rows", type=int, default=2000)
    parser.add_argument("--keep", action="store_true", help="leave the scratch database for another run")
    args = parser.parse_args()

    setup_django(DATABASE)
    from django.conf import settings

    settings.MAILFATHOM = settings.MAILFATHOM.replace(api_export_chunk_rows=args.chunk_rows)
    version = migrated_database(DATABASE)
    print(f"PostgreSQL {version}; {os.cpu_count()} cores; load average {os.getloadavg()}")
    started = time.perf_counter()
    fill(args.rows)
    print(f"filled {args.rows} rows in {time.perf_counter() - started:.1f} s; chunk {args.chunk_rows} rows")

    seconds, lines, size = timed(anchor)
    anchor_rate = (lines - 1) / seconds
    print(
        f"anchor COPY csv: {lines - 1} rows, {size / MB:.1f} MB, {seconds:.2f} s = {anchor_rate:,.0f} rows/s"
    )
    measure_formats("", drain, args.rows, anchor_rate)

    started = time.perf_counter()
    fill_trail(args.rows)
    print(
        f"filled {args.rows} answering-trail entries (2 emails each) in {time.perf_counter() - started:.1f} s"
    )
    measure_formats("trail ", drain_trail, args.rows)
    if not args.keep:
        drop_database(DATABASE)


if __name__ == "__main__":
    main()

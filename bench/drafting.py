"""The drafting gate at scale: messages_awaiting_a_draft over N emails, against an anchor.

    .venv/bin/python bench/drafting.py [--emails 100000] [--repeat 200] [--limit 20] [--window 7]
                                       [--keep] [--without-index]
    .venv/bin/python bench/drafting.py tokens [--drafts 40] [--keep] [--embed]

The second form is the other half of drafting's benchmarks: the tokens per draft by stage
with the scripted OpenAI-compatible server (bench/drafting_tokens.py, run as it is).

Builds one account of N emails in a scratch database (mailfathom_drafting_bench, re-created
each run; --keep reuses it when it already holds N emails). The gate needs rows, not text:
the emails are inserted by one INSERT ... SELECT over generate_series, with short
placeholder subjects and bodies, spread evenly over three years (so a 7-day window holds
about 0.64% of them), 70% in the inbox, 15% in Sent (outgoing), 10% in an archive hidden
from tools and 5% in junk; a quarter of the incoming mail is bulk; threads of four
emails neighbouring in time (the folders are scattered over them, so mail in Sent answers
some threads and not others); a draft for every fifth email, and a refused attempt (dated
when the email came) for one email in fifty. A second account of N/10 emails shares the
table. Then VACUUM ANALYZE.

It times, after a warm-up, `repeat` calls of
- the gate: answering.drafting.gate.messages_awaiting_a_draft(account, limit), the call a
  run makes (one query; the ORM compiles it each time, as in production);
- the anchor: a plain indexed SELECT of the same limit, the inbox's newest `limit` emails
  over the email_folder_timeline index (Email.objects.filter(folder=inbox)[:limit]);
and prints p50/p95 of both, their ratio and the load average; then the same for the two
statements alone (compiled once, executed and fetched over the cursor: what PostgreSQL
spends, without the ORM building the query); then EXPLAIN (ANALYZE, BUFFERS) of the gate.
With --backfill it then forgets the account's threads, gives every email References
naming its thread's earlier emails (a thread's first names a parent never stored), and
times manage.py thread_mail's work (thread_unthreaded in batches of 500) to the end,
checking it finds the fill's own threads again.
With --without-index it then drops the partial index email_awaiting_draft, measures the
gate again and prints that plan too, to show what the index serves.
Results and their reading: docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import os
import runpy
import statistics
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "bench"))
sys.path.insert(0, str(REPO))

from sync import _server_connection, commit, recreate_database, setup_django  # noqa: E402

DATABASE = "mailfathom_drafting_bench"
SPAN_DAYS = 3 * 365
FOLDERS = (  # alias, role, visible to tools, share of the mail
    ("inbox", "inbox", True, 0.70),
    ("sent", "sent", True, 0.15),
    ("archive", "archive", False, 0.10),
    ("junk", "junk", True, 0.05),
)


def _fill(account_pk: int, folder_pks: dict[str, int], emails: int, end: datetime, salt: str) -> None:
    """Insert `emails` rows for one account in one statement (see the module docstring)."""
    from django.db import connection

    # Folder by the shares of FOLDERS over (37 n) mod 100: scattered, so threads mix folders.
    bounds, start = [], 0
    for alias, _, _, share in FOLDERS:
        bounds.append((start, start + round(share * 100), folder_pks[alias]))
        start += round(share * 100)
    folder_case = " ".join(
        f"WHEN mod(n * 37, 100) BETWEEN {lo} AND {hi - 1} THEN {pk}" for lo, hi, pk in bounds
    )
    sent_pk = folder_pks["sent"]
    sql = f"""
        INSERT INTO mailbox_email (
            id, account_id, folder_id, uidvalidity, uid, message_id, in_reply_to, "references",
            subject, sent_at, received_at, sender_address, sender_name, size_bytes, flags,
            flags_observed, direction, is_bulk, is_list_mail, attachment_count, inline_count,
            attachment_total_bytes, encrypted, unverified_signature, unexpanded_tnef,
            availability, parse_defects, text_body, embedded, participants_text, attachment_text,
            synced_at, thread_id
        )
        SELECT
            md5(%(salt)s || 'e' || n)::uuid, %(account)s, f.folder, 1, n,
            'm' || n || '.' || %(salt)s || '@bench.test', '', ARRAY[]::varchar[],
            'subject ' || n, t.at, t.at, 'person' || mod(n, 997) || '@bench.test', 'Person', 2000,
            ARRAY[]::varchar[], true,
            CASE WHEN f.folder = %(sent)s THEN 'outgoing' ELSE 'incoming' END,
            f.folder <> %(sent)s AND mod(n * 7919, 4) = 0, false,
            0, 0, 0, false, false, false, 'available', ARRAY[]::varchar[], 'body ' || n, false,
            'Person person@bench.test', '', now(),
            md5(%(salt)s || 't' || (n / 4))::uuid  -- threads of four emails neighbouring in time
        FROM generate_series(1, %(emails)s) AS n
        CROSS JOIN LATERAL (SELECT CASE {folder_case} END AS folder) AS f
        CROSS JOIN LATERAL (
            SELECT %(end)s::timestamptz - make_interval(secs => (%(emails)s - n) * %(step)s) AS at
        ) AS t
    """
    with connection.cursor() as cursor:
        cursor.execute(
            sql,
            {
                "salt": salt,
                "account": account_pk,
                "sent": sent_pk,
                "emails": emails,
                "end": end,
                "step": SPAN_DAYS * 86400.0 / emails,
            },
        )
        # A draft for every fifth email, a refused attempt for one in fifty.
        cursor.execute(
            """
            INSERT INTO answering_draft (id, account_id, email_id, body, intent, language, source_ids,
                thread_ids, reference_ids, verdict, reasons, findings, acknowledgements, note,
                model_alias, tokens, status, created_at, updated_at, remote_message_id)
            SELECT md5(e.id::text)::uuid, e.account_id, e.id, 'draft', 'inquiry', 'en', ARRAY[]::uuid[],
                ARRAY[]::uuid[], ARRAY[]::bigint[], 'ready', '[]', '[]', '[]', '', 'drafting', '{}',
                'pending', now(), now(), ''
            FROM mailbox_email e WHERE e.account_id = %s AND mod(e.uid, 5) = 0
            """,
            [account_pk],
        )
        cursor.execute(
            """
            INSERT INTO answering_draftattempt (account_id, email_id, stage, outcome, model_alias,
                tokens, attempted_at)
            SELECT e.account_id, e.id, 'classify', 'classify_refused', 'utility', '{}', e.received_at
            FROM mailbox_email e WHERE e.account_id = %s AND mod(e.uid, 50) = 1
            """,
            [account_pk],
        )


def build(emails: int) -> float:
    from accounts.models import FolderMapping, MailAccount
    from mailbox.models import Folder

    started = time.perf_counter()
    end = datetime.now(UTC)
    for account_id, count, salt in (
        ("drafting-bench", emails, "a"),
        ("neighbour", max(1, emails // 10), "b"),
    ):
        account = MailAccount.objects.create(
            account_id=account_id,
            display_name=account_id,
            imap_host="127.0.0.1",
            username=f"{account_id}@bench.test",
            drafting_enabled=True,
        )
        folder_pks = {}
        for alias, role, visible, _ in FOLDERS:
            mapping = FolderMapping.objects.create(
                account=account, alias=alias, remote_name=alias.upper(), role=role, visible_to_tools=visible
            )
            folder_pks[alias] = Folder.objects.create(
                account=account, mapping=mapping, remote_name=alias.upper()
            ).pk
        _fill(account.pk, folder_pks, count, end, salt)
    return time.perf_counter() - started


def vacuum() -> None:
    from sync import _server_connection as server

    with server(DATABASE) as conn:
        conn.execute("VACUUM ANALYZE")


def timed(call: Callable[[], object], repeat: int) -> list[float]:
    for _ in range(max(3, repeat // 10)):
        call()  # warm-up: caches, plans
    samples = []
    for _ in range(repeat):
        started = time.perf_counter()
        call()
        samples.append((time.perf_counter() - started) * 1000)
    return samples


def percentile(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def statement(queryset) -> Callable[[], object]:
    """The queryset's SQL compiled once: a call executes and fetches it, no ORM in between."""
    from django.db import connection

    sql, params = queryset.query.sql_with_params()

    def run() -> object:
        with connection.cursor() as cursor:
            cursor.execute(sql, params)
            return cursor.fetchall()

    return run


def explain(queryset) -> str:
    from django.db import connection

    sql, params = queryset.query.sql_with_params()
    with connection.cursor() as cursor:
        cursor.execute(f"EXPLAIN (ANALYZE, BUFFERS) {sql}", params)
        return "\n".join(row[0] for row in cursor.fetchall())


def report(label: str, gate: list[float], anchor: list[float]) -> None:
    g50, g95 = statistics.median(gate), percentile(gate, 0.95)
    a50, a95 = statistics.median(anchor), percentile(anchor, 0.95)
    print(f"\n{label}  (load average {os.getloadavg()[0]:.2f})")
    print(f"  gate   p50 {g50:7.2f} ms   p95 {g95:7.2f} ms")
    print(f"  anchor p50 {a50:7.2f} ms   p95 {a95:7.2f} ms")
    print(f"  ratio gate/anchor: p50 {g50 / a50:.1f}x   p95 {g95 / a95:.1f}x")


def backfill(account_pk: int) -> None:
    """Forget the account's threads, give each email its thread's References, re-thread it all.

    The threads of the fill are four neighbouring emails; each email but a thread's first
    names its predecessors in References, the first one (a quarter of them) also a parent
    never stored (a JWZ placeholder). The result must be the fill's own threads.
    """
    from django.db import connection

    from mailbox.services.threads import thread_unthreaded

    with connection.cursor() as cursor:
        cursor.execute(
            """
            UPDATE mailbox_email e SET thread_id = NULL, "references" = r.refs, in_reply_to = r.parent
            FROM (
                SELECT p.id,
                    ARRAY(
                        SELECT 'm' || k || '.a@bench.test'
                        FROM generate_series((p.uid / 4) * 4, p.uid - 1) AS k WHERE k > 0
                    )::varchar[]
                    || CASE WHEN mod(p.uid, 4) = 0
                       THEN ARRAY['lost-' || p.uid / 4 || '@bench.test']::varchar[]
                       ELSE ARRAY[]::varchar[] END AS refs,
                    CASE WHEN mod(p.uid, 4) = 0 THEN ''
                    ELSE 'm' || (p.uid - 1) || '.a@bench.test' END AS parent
                FROM mailbox_email p WHERE p.account_id = %s
            ) AS r
            WHERE e.id = r.id
            """,
            [account_pk],
        )
    vacuum()
    started = time.perf_counter()
    threaded = 0
    while done := thread_unthreaded(account_pk, batch_size=500):
        threaded += done
    seconds = time.perf_counter() - started
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(DISTINCT thread_id), count(*) FILTER (WHERE thread_id IS NULL) "
            "FROM mailbox_email WHERE account_id = %s",
            [account_pk],
        )
        threads, left = cursor.fetchone()
    print(
        f"\nbackfill (thread_mail's work, batches of 500): {threaded} emails in {seconds:.1f} s = "
        f"{threaded / seconds:,.0f} emails/s; {threads} threads (the fill has "
        f"{threaded // 4 + 1}); {left} left unthreaded (load average {os.getloadavg()[0]:.2f})"
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--emails", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=200)
    parser.add_argument("--limit", type=int, default=20, help="emails per gate call (a run's default)")
    parser.add_argument("--window", type=int, default=7, help="the account's drafting window in days (1-365)")
    parser.add_argument(
        "--backfill", action="store_true", help="also time manage.py thread_mail's work over the account"
    )
    parser.add_argument("--keep", action="store_true", help="reuse the scratch database if it holds N emails")
    parser.add_argument(
        "--without-index", action="store_true", help="also measure with email_awaiting_draft dropped"
    )
    args = parser.parse_args()

    setup_django(DATABASE)
    from django.core.management import call_command
    from django.db import connection, connections

    print(f"commit {commit()}; {datetime.now(UTC):%Y-%m-%d %H:%M} UTC")
    print(f"machine: {os.cpu_count()} cores; load average {os.getloadavg()}")
    with _server_connection("postgres") as conn:
        exists = bool(conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [DATABASE]).fetchone())
        print(f"PostgreSQL {conn.execute('SHOW server_version').fetchone()[0]}")
    from mailbox.models import Email

    reuse = False
    if args.keep and exists:
        call_command("migrate", verbosity=0)
        reuse = Email.objects.filter(account__account_id="drafting-bench").count() == args.emails
    if not reuse:
        connections.close_all()
        recreate_database(DATABASE)
        call_command("migrate", verbosity=0)
        print(f"building {args.emails} emails (+{args.emails // 10} in a second account) ...", flush=True)
        print(f"  built in {build(args.emails):.1f} s")
    vacuum()

    from accounts.models import MailAccount
    from answering.drafting.gate import awaiting_a_draft, messages_awaiting_a_draft
    from mailbox.models import Folder

    account = MailAccount.objects.get(account_id="drafting-bench")
    MailAccount.objects.filter(pk=account.pk).update(drafting_window_days=args.window)
    account.refresh_from_db()
    inbox = Folder.objects.get(account=account, mapping__alias="inbox")
    total = Email.objects.filter(account=account).count()
    awaiting = awaiting_a_draft(account).count()
    print(
        f"account: {total} emails; {awaiting} awaiting a draft (window {account.drafting_window_days} days)"
    )

    def gate() -> object:
        return messages_awaiting_a_draft(account, args.limit)

    def anchor() -> object:
        return list(Email.objects.filter(folder=inbox).order_by("-received_at", "-id")[: args.limit])

    gate_sql = statement(awaiting_a_draft(account)[: args.limit])
    anchor_sql = statement(Email.objects.filter(folder=inbox).order_by("-received_at", "-id")[: args.limit])
    gate_ms, anchor_ms = timed(gate, args.repeat), timed(anchor, args.repeat)
    report(f"calls, limit {args.limit}, {args.repeat} each, with email_awaiting_draft", gate_ms, anchor_ms)
    report("statements alone (compiled once)", timed(gate_sql, args.repeat), timed(anchor_sql, args.repeat))
    print("\nEXPLAIN (ANALYZE, BUFFERS) of the gate:")
    print(explain(awaiting_a_draft(account)[: args.limit]))
    print("\nEXPLAIN (ANALYZE, BUFFERS) of the anchor:")
    print(explain(Email.objects.filter(folder=inbox).order_by("-received_at", "-id")[: args.limit]))

    if args.backfill:
        backfill(account.pk)

    if args.without_index:
        with connection.cursor() as cursor:
            cursor.execute("DROP INDEX IF EXISTS email_awaiting_draft")
        gate_ms, anchor_ms = timed(gate, args.repeat), timed(anchor, args.repeat)
        report("calls without email_awaiting_draft", gate_ms, anchor_ms)
        report("statements alone, without it", timed(gate_sql, args.repeat), timed(anchor_sql, args.repeat))
        print("\nEXPLAIN (ANALYZE, BUFFERS) of the gate without email_awaiting_draft:")
        print(explain(awaiting_a_draft(account)[: args.limit]))
        print("\n(the index is gone from the scratch database: the next run rebuilds it)")
        connections.close_all()
        recreate_database(DATABASE)  # never leave a database that differs from the migrations


if __name__ == "__main__":
    if sys.argv[1:2] == ["tokens"]:
        # One entry point for both halves; the tokens bench keeps its own file and options.
        sys.argv = [str(Path(__file__).with_name("drafting_tokens.py")), *sys.argv[2:]]
        runpy.run_path(sys.argv[0], run_name="__main__")
    else:
        main()

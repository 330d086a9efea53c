"""What attachment text adds to a backfill: the backfill and the pass, against the backfill alone.

Run from the repository root with the project's interpreter:

    .venv/bin/python bench/attachment_backfill.py [--messages 600] [--repeat 1]

It builds N messages, each a short text body with one to three attachments taken in turn
from the readable vendored files of tests/data/attachments/ (PDF, DOCX, XLSX, PPTX, the
three OpenDocument kinds, RTF, HTML, CSV, plain text, and forwarded.eml as an attached
message), and the same N messages with their attachments stripped. Both sets are laid into
a private Dovecot (tests/dovecot.py), one user each. Every round then runs, each in a
fresh Python process, against a scratch database (never the product's):

  (a) the anchor: mailbox.sync.engine.synchronize_account backfilling the stripped messages;
  (b) the same backfill of the messages with their attachments (what carrying the files
      costs storing alone), and then, in the same process,
  (c) the attachment text pass, mailbox.services.attachment_text.extract_pending, over
      that account's mail: every attachment in its own limited child, as the worker does.

For each it reports wall seconds and CPU seconds: the Python process, the extraction
children it started (RUSAGE_CHILDREN) and the PostgreSQL backend that served it (Dovecot
left out, as in bench/sync.py). Then the ratios: (b)+(c) over (b), the cost of the pass on
top of the same backfill, and (b)+(c) over (a). The pass is also broken down by kind
(attachments/s and MB/s inside the pass, from a wrapper around its extract_text call) and
into the children's share and the rest (parsing, reading the stored copy, the writes).

The figures and their reading are in docs/benchmarks.md ("Attachment text in a backfill").
No timing is asserted anywhere.
"""

from __future__ import annotations

import argparse
import email.policy
import email.utils
import json
import mimetypes
import os
import platform
import shutil
import signal
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from datetime import timedelta
from email.message import EmailMessage
from email.parser import BytesParser
from pathlib import Path

# Shared with the backfill benchmark: Django on a scratch database, Dovecot seeding, CPU.
from sync import (
    RESULT_MARKER,
    _own_cpu,
    bench_account,
    cpu_model,
    drop_database,
    migrated_database,
    process_cpu,
    run_script_child,
    seed_user,
    setup_django,
    warm_up,
    wire_size,
)

REPO = Path(__file__).resolve().parent.parent
VENDORED = REPO / "tests" / "data" / "attachments"
BENCH_DATABASE = "mailfathom_bench_attachments"
PLAIN_USER = "pool116"  # the stripped messages
ATTACHED_USER = "pool115"  # the messages with attachments
# The vendored files the tests expect to read "ok" (tests/data/attachments/README.md).
READABLE = (
    "invoice.pdf",
    "contract.docx",
    "quote.xlsx",
    "review.pptx",
    "delivery.odt",
    "costs.ods",
    "budget.odp",
    "reminder.rtf",
    "newsletter.html",
    "payments.csv",
    "minutes.txt",
    "forwarded.eml",
)
MB = 1_000_000

PARAGRAPHS = (
    "Please find the documents for this week attached. The figures were checked against "
    "the ledger on Monday and the open points are listed at the end of the second file.",
    "If anything is missing, reply to this message and I will send it again before the "
    "review on Thursday. The earlier versions can be thrown away.",
    "Thanks for the quick turnaround on the last batch; the team found the summary useful "
    "and asked for the same layout next time.",
)


# --- the messages -----------------------------------------------------------------------


def build_messages(count: int) -> tuple[list[tuple[str, bytes]], list[tuple[str, bytes]], dict[str, int]]:
    """N messages with attachments and the same N stripped; and the attachments per file."""
    files = {name: (VENDORED / name).read_bytes() for name in READABLE}
    attached: list[tuple[str, bytes]] = []
    plain: list[tuple[str, bytes]] = []
    used: dict[str, int] = defaultdict(int)
    turn = 0
    for index in range(count):
        body = "\n\n".join(PARAGRAPHS[(index + n) % len(PARAGRAPHS)] for n in range(2)) + f"\n\nRef {index}\n"
        message = EmailMessage()
        message["From"] = f"Sender {index % 17} <sender{index % 17}@example.org>"
        message["To"] = "Bench Reader <reader@example.com>"
        message["Subject"] = f"Documents for week {index % 52 + 1}, set {index}"
        message["Date"] = email.utils.format_datetime(
            email.utils.localtime().replace(microsecond=0) - timedelta(hours=index)
        )
        message["Message-ID"] = f"<attach-bench-{index}@example.org>"
        message.set_content(body)
        plain.append((f"plain-{index}:2,S", bytes(message)))
        for _ in range(1 + index % 3):  # 1, 2, 3 attachments in turn: 2 on average
            name = READABLE[turn % len(READABLE)]
            turn += 1
            used[name] += 1
            data = files[name]
            if name.endswith(".eml"):
                inner = BytesParser(policy=email.policy.default).parsebytes(data)
                message.add_attachment(inner, filename=name)
            else:
                media = mimetypes.guess_type(name)[0] or "application/octet-stream"
                maintype, subtype = media.split("/", 1)
                message.add_attachment(data, maintype=maintype, subtype=subtype, filename=name)
        attached.append((f"attached-{index}:2,S", bytes(message)))
    return attached, plain, dict(used)


# --- the child: one backfill, and the pass when asked -----------------------------------


def _children_cpu() -> float:
    import resource

    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def child_main(spec: dict) -> None:
    setup_django(spec["database"])
    from django.db import connection

    import mailbox.services.attachment_text as attachment_text
    from mailbox.extraction import kind_of
    from mailbox.models import AttachmentExtraction, AttachmentText, Email
    from mailbox.sync.engine import synchronize_account

    account = bench_account(spec["account_id"], spec["host"], spec["port"], spec["user"], spec["password"])
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        backend = int(cursor.fetchone()[0])

    def measure(work):
        own, children, postgres = _own_cpu(), _children_cpu(), process_cpu(backend)
        started = time.perf_counter()
        value = work()
        seconds = time.perf_counter() - started
        after = process_cpu(backend)
        return value, {
            "seconds": seconds,
            "cpu_seconds": _own_cpu() - own,
            "children_cpu_seconds": _children_cpu() - children,
            "postgres_cpu_seconds": after - postgres if after is not None and postgres is not None else None,
        }

    run, backfill = measure(lambda: synchronize_account(account.pk))
    stored = Email.objects.filter(account=account).count()
    failures = [f.failure_code for f in run.folders if f.failure_code]
    if run.skipped or failures or run.failure_code or stored != spec["expected"]:
        raise SystemExit(
            f"backfill incomplete: skipped={run.skipped!r} failures={failures} "
            f"run failure={run.failure_code} stored={stored} expected={spec['expected']}"
        )
    result: dict = {"messages": stored, "backfill": backfill}
    if spec.get("set_aside"):
        # A backfill measured only for the anchor's median: keep its mail out of the pass's
        # queue (which is every account's), untimed.
        from mailbox.models import Availability

        Email.objects.filter(account=account).update(availability=Availability.EXCEEDED_SIZE_LIMIT)

    if spec.get("extract"):
        waiting = attachment_text.pending_emails().filter(account=account).count()
        if waiting != stored or attachment_text.pending_count() != waiting:
            raise SystemExit(
                f"{waiting} of {stored} emails wait for the pass, and others besides; expected all"
            )
        # Watch the pass's one call into extraction: per kind, bytes, seconds, outcome.
        calls: list[tuple[str, int, float, str]] = []
        inner = attachment_text.extract_text

        def timed_extract(data, media_type, file_name, **kwargs):
            started = time.perf_counter()
            extracted = inner(data, media_type, file_name, **kwargs)
            kind = kind_of(media_type, file_name)
            calls.append(
                (
                    kind.value if kind else "none",
                    len(data),
                    time.perf_counter() - started,
                    extracted.outcome.value,
                )
            )
            return extracted

        attachment_text.extract_text = timed_extract
        passed, extraction = measure(attachment_text.extract_pending)
        attachment_text.extract_text = inner
        done = AttachmentExtraction.objects.filter(email__account=account).count()
        rows = AttachmentText.objects.filter(email__account=account).count()
        if passed.inactive or passed.emails != stored or done != stored or rows != spec["attachments"]:
            raise SystemExit(
                f"pass incomplete: inactive={passed.inactive} emails={passed.emails} marked={done} "
                f"rows={rows} expected {stored} emails and {spec['attachments']} attachments"
            )
        result["pass"] = {
            **extraction,
            "emails": passed.emails,
            "attachments": passed.attachments,
            "outcomes": dict(passed.outcomes),
            "calls": calls,
        }
    print(RESULT_MARKER + json.dumps(result), flush=True)


def run_child(spec: dict) -> dict:
    return run_script_child(Path(__file__).resolve(), spec)


# --- report -----------------------------------------------------------------------------


def _cpu(part: dict) -> float:
    return part["cpu_seconds"] + part["children_cpu_seconds"] + (part["postgres_cpu_seconds"] or 0.0)


def _row(label: str, messages: int, megabytes: float, part: dict) -> str:
    return (
        f"{label:44} {part['seconds']:8.2f} {messages / part['seconds']:8.1f} "
        f"{megabytes / part['seconds']:7.2f} {part['cpu_seconds']:7.2f} {part['children_cpu_seconds']:7.2f} "
        f"{part['postgres_cpu_seconds'] or 0:7.2f} {_cpu(part):7.2f}"
    )


def median_backfill(runs: list[dict]) -> dict:
    """The backfill of median wall time among `runs` (all of one set, one round)."""
    ordered = sorted(runs, key=lambda run: run["backfill"]["seconds"])
    return ordered[(len(ordered) - 1) // 2]


def print_round(
    number: int, plains: list[dict], attacheds: list[dict], extracted: dict, sizes: tuple[float, float]
) -> None:
    """(a) and (b) are the median of the round's backfills of each set; (c) the one pass."""
    plain_mb, attached_mb = sizes
    plain, attached = median_backfill(plains), median_backfill(attacheds)
    extraction = extracted["pass"]
    both = {
        key: attached["backfill"][key] + extraction[key]
        for key in ("seconds", "cpu_seconds", "children_cpu_seconds")
    }
    both["postgres_cpu_seconds"] = (attached["backfill"]["postgres_cpu_seconds"] or 0.0) + (
        extraction["postgres_cpu_seconds"] or 0.0
    )
    messages = plain["messages"]
    print()
    walls = " / ".join(
        f"{a['backfill']['seconds']:.2f}:{b['backfill']['seconds']:.2f}"
        for a, b in zip(plains, attacheds, strict=True)
    )
    print(f"round {number}: each backfill in turn, wall s stripped:attached: {walls}")
    print()
    print(
        f"{'':44} {'wall s':>8} {'msg/s':>8} {'MB/s':>7} {'CPU py':>7} "
        f"{'CPU ch':>7} {'CPU pg':>7} {'CPU all':>7}"
    )
    print(_row("(a) anchor: backfill, stripped (median)", messages, plain_mb, plain["backfill"]))
    print(_row("(b) backfill, with attachments (median)", messages, attached_mb, attached["backfill"]))
    print(_row("(c) attachment text pass", messages, attached_mb, extraction))
    print(_row("(b)+(c) backfill and pass", messages, attached_mb, both))
    print(
        f"  (b)+(c) / (b): wall {both['seconds'] / attached['backfill']['seconds']:.2f}, "
        f"CPU {_cpu(both) / _cpu(attached['backfill']):.2f}   "
        f"(b)+(c) / (a): wall {both['seconds'] / plain['backfill']['seconds']:.2f}, "
        f"CPU {_cpu(both) / _cpu(plain['backfill']):.2f}   "
        f"(b) / (a): wall {attached['backfill']['seconds'] / plain['backfill']['seconds']:.2f}"
    )
    calls = extraction["calls"]
    in_children = sum(call[2] for call in calls)
    print(
        f"  the pass: {extraction['attachments']} attachments of {extraction['emails']} emails, "
        f"{extraction['attachments'] / extraction['seconds']:.1f} attachments/s; "
        f"{in_children:.2f} s of its {extraction['seconds']:.2f} s in extract_text "
        f"({100 * in_children / extraction['seconds']:.0f} %), the rest parsing and writing; "
        f"outcomes {extraction['outcomes']}"
    )


def print_kinds(rounds: list[dict]) -> None:
    by_kind: dict[str, list[tuple[int, float]]] = defaultdict(list)
    for attached in rounds:
        for kind, size, seconds, _ in attached["pass"]["calls"]:
            by_kind[kind].append((size, seconds))
    print()
    print(
        f"inside the pass, by kind (every round): {'files':>6} {'MB':>7} {'att/s':>7} {'MB/s':>7} "
        f"{'median s':>9}"
    )
    for kind, rows in sorted(by_kind.items()):
        size = sum(row[0] for row in rows) / MB
        seconds = sum(row[1] for row in rows)
        median = statistics.median(row[1] for row in rows)
        print(
            f"  {kind:37} {len(rows):>6} {size:>7.2f} {len(rows) / seconds:>7.1f} {size / seconds:>7.2f} "
            f"{median:>9.3f}"
        )


# --- main -------------------------------------------------------------------------------


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--messages", type=int, default=600, help="N, messages to build (default 600)")
    parser.add_argument("--repeat", type=int, default=1, help="rounds of (a), (b) and (c)")
    parser.add_argument(
        "--backfills",
        type=int,
        default=3,
        help="backfills of each set per round; the median is reported",
    )
    parser.add_argument("--database", default=BENCH_DATABASE, help="throwaway database, re-created each run")
    parser.add_argument("--json", help="also write every measurement to this file")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child_main(json.loads(args.child))
        return
    if args.messages < 1 or args.repeat < 1 or args.backfills < 1:
        parser.error("--messages, --repeat and --backfills must be at least 1")

    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))
    sys.path.insert(0, str(REPO))
    from tests.dovecot import POOL, running_dovecot

    attached, plain, used = build_messages(args.messages)
    attachments = sum(used.values())
    sizes = (sum(wire_size(raw) for _, raw in plain) / MB, sum(wire_size(raw) for _, raw in attached) / MB)
    print(
        f"{len(attached)} messages with {attachments} attachments ({sizes[1]:.1f} MB as IMAP sends them), "
        f"and the same stripped ({sizes[0]:.1f} MB); attachments per file: {used}"
    )
    setup_django(args.database)
    postgres_version = migrated_database(args.database)
    dovecot_root = Path(tempfile.mkdtemp(prefix="mf-bench-att-"))
    try:
        with running_dovecot(dovecot_root) as server:
            seed_user(server, PLAIN_USER, plain)
            seed_user(server, ATTACHED_USER, attached)
            warm_up(server, PLAIN_USER, POOL[PLAIN_USER], len(plain))
            warm_up(server, ATTACHED_USER, POOL[ATTACHED_USER], len(attached))
            load = ", ".join(f"{value:.2f}" for value in os.getloadavg())
            print(f"load average before measuring: {load}")
            print(
                f"machine: {os.cpu_count()} cores ({cpu_model()}), Python {platform.python_version()}, "
                f"Dovecot {server.version}, PostgreSQL {postgres_version}"
            )

            def spec(account_id: str, user: str, **extra: object) -> dict:
                return {
                    "database": args.database,
                    "account_id": account_id,
                    "host": server.host,
                    "port": server.imap_port,
                    "user": user,
                    "password": POOL[user],
                    "expected": args.messages,
                    **extra,
                }

            rounds = []
            for number in range(1, args.repeat + 1):
                plains, attacheds = [], []
                for turn in range(1, args.backfills):  # the anchor's extra backfills, interleaved
                    plains.append(run_child(spec(f"bench-plain-{number}-{turn}", PLAIN_USER)))
                    attacheds.append(
                        run_child(spec(f"bench-attached-{number}-{turn}", ATTACHED_USER, set_aside=True))
                    )
                plains.append(run_child(spec(f"bench-plain-{number}", PLAIN_USER)))
                extracted = run_child(
                    spec(f"bench-attached-{number}", ATTACHED_USER, extract=True, attachments=attachments)
                )
                attacheds.append(extracted)
                rounds.append({"plain": plains, "attached": attacheds, "extracted": extracted})
                print_round(number, plains, attacheds, extracted, sizes)
                load = ", ".join(f"{value:.2f}" for value in os.getloadavg())
                print(f"  load average after round {number}: {load}")
        print_kinds([r["extracted"] for r in rounds])
        print()
        for r in rounds:
            backfill = median_backfill(r["attached"])["backfill"]
            extraction = r["extracted"]["pass"]
            messages = r["extracted"]["messages"]
            stored_ms = (1000 * backfill["seconds"] / messages, 1000 * _cpu(backfill) / messages)
            pass_ms = (1000 * extraction["seconds"] / messages, 1000 * _cpu(extraction) / messages)
            child_ms = 1000 * extraction["children_cpu_seconds"] / extraction["attachments"]
            print(
                f"per message: backfill with attachments {stored_ms[0]:.1f} ms wall, "
                f"{stored_ms[1]:.1f} ms CPU; "
                f"the pass {pass_ms[0]:.0f} ms wall, {pass_ms[1]:.0f} ms CPU "
                f"({child_ms:.0f} ms of the children's CPU per attachment)"
            )
        if args.json:
            Path(args.json).write_text(json.dumps({"messages": args.messages, "rounds": rounds}, indent=1))
    finally:
        drop_database(args.database)
        shutil.rmtree(dovecot_root, ignore_errors=True)


if __name__ == "__main__":
    main()

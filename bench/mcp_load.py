"""/mcp under load: 20 legitimate clients with the slot wait on and off, then beside a flood.

    .venv/bin/python bench/mcp_load.py [--emails 10000] [--clients 20] [--flood 200]
                                       [--seconds 60] [--slices 2] [--max-concurrent-calls N]
                                       [--anchor-tree DIR [--anchor-uvicorn-args "..."]]
                                       [--clients-nice N] [--profile FILE]

On a scratch database (mailfathom_mcp_load_bench) holding one account of N emails, each
with its stored MIME, uvicorn processes serve /mcp with posture api-key: "wait on" with the
product's slot wait (MAILFATHOM_MCP_SLOT_WAIT_SECONDS), "wait off" with the wait at 0 (a
call finding every slot busy is refused at once, as before the wait existed), and with
--anchor-tree a third from another checkout (`git archive <commit> | tar -x -C DIR`).
Only one of them is under load at a time. Then:

- phase A: `--clients` real `mcp` clients (one session each, as an assistant keeps one)
  call list_emails (page of 25), search_emails (limit 20) and get_email_content (1 to 3
  ids) in turn for `--seconds` per server, in `--slices` slices alternating between the
  servers (ABBA), so drift in the machine's load hits each alike;
- phase B: the same against "wait on", while `--flood` concurrent requests with a wrong
  Bearer key are sent from a separate process (keep-alive connections, each POSTing
  tools/call again as soon as it is answered).

For each it prints calls/s and p50/p95 of the legitimate calls that were served, and the
errors split into documented refusals (a MailFathom caller-category code such as 54002, or
401 for a wrong key) and other errors (54001, 504, a dropped connection, anything else).
The servers run bench/mcp_timing.py's stopwatch, so each also prints the server's own share
of a call (the request's time in the server less its wait for a slot and its use case) and
the wait, p50 per tool. Then the ratios: calls/s with the wait on / off (and / the anchor),
and phase B's legitimate p95 / phase A's (target: at most 2, and no error other than
documented refusals). A client told 54002 waits 50 ms before its next call, as a
well-behaved client backs off; that wait is not counted as latency. The clients share the
machine's cores with the servers; --clients-nice lowers their priority, to see how much of
the server's own share is waiting for the clients' CPU.
"""

from __future__ import annotations

import argparse
import hashlib
import multiprocessing
import os
import random
import shlex
import statistics
import sys
import time
import zlib
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
# bench/mcp.py is named like the `mcp` package: keep this folder off the import path.
sys.path[:] = [entry for entry in sys.path if Path(entry or ".").resolve() != REPO / "bench"]
sys.path.insert(0, str(REPO))

from bench.sync import commit, drop_database, migrated_database, setup_django  # noqa: E402
from bench.uvicorn_server import mcp_server_environment, percentile, start_server, stop_server  # noqa: E402

TIMED_APP = "bench.mcp_timing:application"

DATABASE = "mailfathom_mcp_load_bench"
WORDS = (
    "invoice payment contract meeting schedule report budget travel approval review "
    "quarter supplier delivery renewal deadline agenda minutes proposal estimate audit"
).split()
BATCH = 1000
BACKOFF_SECONDS = 0.05
WRONG_KEY = "mfk_" + "x" * 43
CALLER_CATEGORY = range(51000, 59000)
UNDESCRIBED = 54001


# --- the mailbox ----------------------------------------------------------------------------


def seed(count: int) -> list[str]:
    """Insert one account of `count` emails with To participants and stored MIME; return the ids."""
    from django.db import connection, transaction

    from accounts.models import FolderRole
    from mailbox.ids import uuid7
    from mailbox.models import Availability, Direction, Email, Participant, ParticipantRole, RawMessage
    from mailbox.services.lexical_search import refresh_term_stats
    from tests.factories import MailAccountFactory
    from tests.mailbox.factories import mapped_folder

    rng = random.Random(11)  # noqa: S311 (synthetic text, not secrets)
    account = MailAccountFactory(account_id="bench", display_name="Bench")
    inbox = mapped_folder(
        account, "inbox", FolderRole.INBOX, uidvalidity=1, last_committed_at=datetime.now(UTC)
    )
    first = datetime(2024, 1, 1, tzinfo=UTC)
    ids: list[str] = []
    emails: list[Email] = []
    participants: list[Participant] = []
    raws: list[RawMessage] = []

    def flush() -> None:
        with transaction.atomic():
            Email.objects.bulk_create(emails)
            Participant.objects.bulk_create(participants)
            RawMessage.objects.bulk_create(raws)
        emails.clear()
        participants.clear()
        raws.clear()

    for uid in range(1, count + 1):
        email_id = uuid7()
        subject = f"{rng.choice(WORDS)} {rng.choice(WORDS)} {uid}"
        body = " ".join(rng.choice(WORDS) for _ in range(rng.randrange(40, 200)))
        to = f"person{uid % 50}@example.org"
        received = first + timedelta(minutes=7 * uid)
        mime = (
            f"From: Sender {uid % 30} <sender{uid % 30}@example.com>\r\nTo: {to}\r\n"
            f"Subject: {subject}\r\nMessage-ID: <bench.{uid}@load-bench.invalid>\r\n"
            f"Date: {received.strftime('%a, %d %b %Y %H:%M:%S +0000')}\r\n"
            f"Content-Type: text/plain; charset=utf-8\r\n\r\n{body}\r\n"
        ).encode()
        compressed = zlib.compress(mime)
        emails.append(
            Email(
                id=email_id,
                account=account,
                folder=inbox,
                uidvalidity=1,
                uid=uid,
                message_id=f"bench.{uid}@load-bench.invalid",
                subject=subject,
                sent_at=received - timedelta(seconds=30),
                received_at=received,
                sender_address=f"sender{uid % 30}@example.com",
                sender_name=f"Sender {uid % 30}",
                size_bytes=len(mime),
                flags=["\\Seen"],
                flags_observed=True,
                direction=Direction.INCOMING,
                attachment_count=0,
                inline_count=0,
                attachment_total_bytes=0,
                availability=Availability.AVAILABLE,
                text_body=body,
            )
        )
        participants.append(
            Participant(email_id=email_id, role=ParticipantRole.TO, position=0, address=to, display_name="")
        )
        raws.append(
            RawMessage(
                email_id=email_id,
                compressed=compressed,
                sha256=hashlib.sha256(mime).hexdigest(),
                original_size=len(mime),
                stored_size=len(compressed),
            )
        )
        ids.append(str(email_id))
        if len(emails) >= BATCH:
            flush()
    if emails:
        flush()
    refresh_term_stats()
    with connection.cursor() as cursor:
        cursor.execute("VACUUM ANALYZE")
    return ids


# --- the server -----------------------------------------------------------------------------


# --- legitimate clients ---------------------------------------------------------------------


@dataclass
class Tally:
    durations: dict[str, list[float]] = field(default_factory=dict)
    refusals: Counter = field(default_factory=Counter)  # documented: code -> count
    errors: Counter = field(default_factory=Counter)  # anything else: kind -> count

    def served(self) -> list[float]:
        return [d for values in self.durations.values() for d in values]


def _code(result) -> int | None:
    text = result.content[0].text if result.content else ""
    if text.startswith("MailFathom error "):
        return int(text.removeprefix("MailFathom error ")[:5])
    return None


def _calls(ids: list[str], rng: random.Random):
    while True:
        yield "list_emails", {"pageSize": 25, "direction": rng.choice(["newestFirst", "oldestFirst"])}
        yield "search_emails", {"queryText": f"{rng.choice(WORDS)} {rng.choice(WORDS)}", "resultLimit": 20}
        yield "get_email_content", {"storedEmailIds": rng.sample(ids, rng.randrange(1, 4))}


async def legitimate(
    url: str, key: str, ids: list[str], clients: int, seconds: float, tally: Tally | None = None
) -> Tally:
    import anyio
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    tally = tally if tally is not None else Tally()
    deadline = time.perf_counter() + seconds

    async def one_client(number: int) -> None:
        calls = _calls(ids, random.Random(number))  # noqa: S311 (synthetic load)
        headers = {"Authorization": f"Bearer {key}"}
        async with httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(120)) as http:
            async with Client(streamable_http_client(url, http_client=http)) as client:
                while time.perf_counter() < deadline:
                    name, arguments = next(calls)
                    started = time.perf_counter()
                    try:
                        result = await client.call_tool(name, arguments)
                    except Exception as error:
                        tally.errors[type(error).__name__] += 1
                        continue
                    elapsed = (time.perf_counter() - started) * 1000
                    code = _code(result) if result.is_error else None
                    if not result.is_error:
                        tally.durations.setdefault(name, []).append(elapsed)
                    elif code in CALLER_CATEGORY and code != UNDESCRIBED:
                        tally.refusals[code] += 1
                        await anyio.sleep(BACKOFF_SECONDS)
                    else:
                        tally.errors[f"isError {code}"] += 1

    async with anyio.create_task_group() as group:
        for number in range(clients):
            group.start_soon(one_client, number)
    return tally


# --- the wrong-key flood (its own process, so it does not share the clients' event loop) ----


def _flood(url: str, concurrency: int, seconds: float, queue) -> None:
    import anyio
    import httpx2

    statuses: Counter = Counter()
    durations: list[float] = []
    body = (
        b'{"jsonrpc":"2.0","id":1,"method":"tools/call",'
        b'"params":{"name":"list_emails","arguments":{"pageSize":25}}}'
    )
    headers = {
        "Authorization": f"Bearer {WRONG_KEY}",
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": "2025-06-18",
    }

    async def main() -> None:
        deadline = time.perf_counter() + seconds
        limits = httpx2.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
        async with httpx2.AsyncClient(limits=limits, timeout=httpx2.Timeout(120)) as http:

            async def one() -> None:
                while time.perf_counter() < deadline:
                    started = time.perf_counter()
                    try:
                        response = await http.post(url, content=body, headers=headers)
                        statuses[str(response.status_code)] += 1
                    except Exception as error:
                        statuses[type(error).__name__] += 1
                    durations.append((time.perf_counter() - started) * 1000)

            async with anyio.create_task_group() as group:
                for _ in range(concurrency):
                    group.start_soon(one)

    anyio.run(main)
    queue.put((dict(statuses), durations))


# --- report ---------------------------------------------------------------------------------


def report(label: str, tally: Tally, seconds: float) -> float:
    served = tally.served()
    p95 = percentile(served, 0.95)
    print(f"\n{label}")
    p50 = statistics.median(served) if served else float("nan")
    print(f"  served {len(served)} calls ({len(served) / seconds:.1f}/s): p50 {p50:.1f} ms, p95 {p95:.1f} ms")
    for name, values in sorted(tally.durations.items()):
        print(
            f"    {name:<18} {len(values):>6} calls  p50 {statistics.median(values):>8.1f}"
            f"  p95 {percentile(values, 0.95):>8.1f} ms"
        )
    refused = ", ".join(f"{code}: {n}" for code, n in sorted(tally.refusals.items())) or "none"
    other = ", ".join(f"{kind}: {n}" for kind, n in sorted(tally.errors.items())) or "none"
    print(f"  documented refusals: {refused}")
    print(f"  other errors: {other}")
    return p95


def timings(base: str) -> list[dict]:
    """The stopwatch's spans since the last read (bench/mcp_timing.py), or [] for a server without it."""
    import json
    import urllib.request

    try:
        with urllib.request.urlopen(base + "/__timings", timeout=30) as response:  # noqa: S310 (ours)
            spans = json.loads(response.read())
    except (OSError, ValueError):
        return []
    return spans if isinstance(spans, list) else []


def report_shares(spans: list[dict]) -> float:
    """Print the server's own share and the slot wait, p50 per use case; return the overall p50."""
    if not spans:
        print("  server's own share: not measured (no stopwatch)")
        return float("nan")
    own = [span["own"] for span in spans]
    print(
        f"  server's own share of a call: p50 {statistics.median(own):.2f} ms,"
        f" p95 {percentile(own, 0.95):.2f} ms"
        f" over {len(spans)} calls (the request less its slot wait and its use case)"
    )
    by_name: dict[str, list[dict]] = {}
    for span in spans:
        by_name.setdefault(span.get("name", "?"), []).append(span)
    for name, group in sorted(by_name.items()):
        print(
            f"    {name:<18} own p50 {statistics.median(s['own'] for s in group):>6.2f}"
            f"  use case p50 {statistics.median(s['use_case'] for s in group):>7.1f}"
            f"  slot wait p50 {statistics.median(s.get('wait', 0.0) for s in group):>7.1f}"
            f" p95 {percentile([s.get('wait', 0.0) for s in group], 0.95):>7.1f} ms"
        )
    return statistics.median(own)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--emails", type=int, default=10_000)
    parser.add_argument("--clients", type=int, default=20)
    parser.add_argument("--flood", type=int, default=200)
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument(
        "--max-concurrent-calls",
        type=int,
        default=None,
        help="MAILFATHOM_MCP_MAX_CONCURRENT_CALLS (default: the product's)",
    )
    parser.add_argument("--slices", type=int, default=2, help="phase A slices per server, alternating")
    parser.add_argument("--anchor-tree", type=Path, help="another checkout served as a third server")
    parser.add_argument(
        "--anchor-uvicorn-args",
        default="",
        help='uvicorn options for the anchor only (for example "--loop asyncio --http h11")',
    )
    parser.add_argument("--profile", type=Path, help="cProfile the 'wait on' server's event loop into FILE")
    parser.add_argument(
        "--clients-nice",
        type=int,
        default=0,
        help="lower the CPU priority of the clients and the flood by this much once the servers "
        "run (os.nice), as if the load came from other machines; the servers and PostgreSQL "
        "keep theirs",
    )
    parser.add_argument(
        "--web-processes",
        type=int,
        default=1,
        help="uvicorn processes behind each server's port (--workers; the own-share figures then come "
        "from whichever process answers the stopwatch's read)",
    )
    args = parser.parse_args()

    import anyio

    setup_django(DATABASE)
    migrated_database(DATABASE)
    from django.conf import settings

    settings.MAILFATHOM = settings.MAILFATHOM.replace(embedding_provider="none")
    started = time.perf_counter()
    ids = seed(args.emails)
    print(f"seeded {args.emails} emails in {time.perf_counter() - started:.0f} s")
    from accounts.services.mcp_keys import create_key

    key = create_key("load-bench").key
    env = mcp_server_environment(DATABASE)
    if args.max_concurrent_calls is not None:
        env["MAILFATHOM_MCP_MAX_CONCURRENT_CALLS"] = str(args.max_concurrent_calls)
    if args.profile:
        env["MAILFATHOM_BENCH_PROFILE"] = str(args.profile)
    limit = env.get("MAILFATHOM_MCP_MAX_CONCURRENT_CALLS", "the default")
    processes = ("--workers", str(args.web_processes)) if args.web_processes > 1 else ()
    servers = {
        "wait on": start_server(REPO, env, processes, app=TIMED_APP),
        "wait off": start_server(
            REPO,
            {**env, "MAILFATHOM_MCP_SLOT_WAIT_SECONDS": "0", "MAILFATHOM_BENCH_PROFILE": ""},
            processes,
            app=TIMED_APP,
        ),
    }
    if args.anchor_tree:
        anchor = args.anchor_tree.resolve()
        # An anchor tree that has the stopwatch runs under it too, so its own share is printed.
        timed = (anchor / "bench" / "mcp_timing.py").exists()
        servers["anchor"] = start_server(
            anchor,
            env,
            tuple(shlex.split(args.anchor_uvicorn_args)),
            app=TIMED_APP if timed else "mailfathom.asgi:application",
        )
    bases = {label: base for label, (_, base) in servers.items()}
    if args.clients_nice:
        os.nice(args.clients_nice)  # this process only: started after the servers, it is no parent of theirs
    try:
        print(f"commit {commit()}, {os.cpu_count()} cores, call slots: {limit}, clients' nice: {os.nice(0)}")
        print(f"load average before: {' '.join(f'{v:.2f}' for v in os.getloadavg())}")
        for base in bases.values():
            anyio.run(legitimate, base + "/mcp", key, ids, args.clients, 5.0)  # warm-up, not reported
            timings(base)
        tallies = {label: Tally() for label in bases}
        spans: dict[str, list[dict]] = {label: [] for label in bases}
        labels = list(bases)
        order = [label for n in range(args.slices) for label in (labels if n % 2 == 0 else labels[::-1])]
        for label in order:
            anyio.run(
                legitimate,
                bases[label] + "/mcp",
                key,
                ids,
                args.clients,
                args.seconds / args.slices,
                tallies[label],
            )
            spans[label] += timings(bases[label])
        print(f"load average after phase A: {' '.join(f'{v:.2f}' for v in os.getloadavg())}")
        url = bases["wait on"] + "/mcp"
        queue: multiprocessing.Queue = multiprocessing.Queue()
        flooder = multiprocessing.Process(target=_flood, args=(url, args.flood, args.seconds + 2, queue))
        flooder.start()
        time.sleep(1.0)  # let the flood reach full strength first
        flooded = anyio.run(legitimate, url, key, ids, args.clients, args.seconds)
        flood_spans = timings(bases["wait on"])
        statuses, flood_durations = queue.get(timeout=args.seconds + 120)
        flooder.join(30)
        print(f"load average after phase B: {' '.join(f'{v:.2f}' for v in os.getloadavg())}")

        print(f"\n{args.emails} emails; {args.clients} clients; {args.seconds:.0f} s a phase and server")
        rates, p95s, own = {}, {}, {}
        for label in bases:
            p95s[label] = report(f"phase A, {label}: legitimate clients alone", tallies[label], args.seconds)
            own[label] = report_shares(spans[label])
            rates[label] = len(tallies[label].served()) / args.seconds
        p95_flooded = report(
            f"phase B, wait on: the same beside {args.flood} concurrent wrong-key requests",
            flooded,
            args.seconds,
        )
        report_shares(flood_spans)
        refused = statuses.get("401", 0)
        others = {status: n for status, n in statuses.items() if status != "401"}
        print(
            f"  the flood: {sum(statuses.values())} requests ({sum(statuses.values()) / args.seconds:.0f}/s),"
            f" p50 {statistics.median(flood_durations) if flood_durations else float('nan'):.1f} ms,"
            f" p95 {percentile(flood_durations, 0.95):.1f} ms; 401 (documented): {refused};"
            f" other: {others or 'none'}"
        )
        print(f"\ncalls/s with the wait on / off: {rates['wait on'] / rates['wait off']:.2f}")
        if "anchor" in rates:
            print(f"calls/s with the wait on / the anchor: {rates['wait on'] / rates['anchor']:.2f}")
        print(
            f"refusals with the wait on: {sum(tallies['wait on'].refusals.values())} (target: 0);"
            f" server's own share p50 {own['wait on']:.2f} ms (target: under 3)"
        )
        ratio = p95_flooded / p95s["wait on"]
        clean = not any(t.errors for t in tallies.values()) and not flooded.errors and not others
        print(f"legitimate p95 with the flood / without (wait on): {ratio:.2f} (target: at most 2)")
        print(
            f"errors other than documented refusals: {'none' if clean else 'some (see above)'} (target: none)"
        )
    finally:
        for process, _ in servers.values():
            stop_server(process)
        drop_database(DATABASE)


if __name__ == "__main__":
    main()

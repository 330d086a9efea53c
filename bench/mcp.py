"""What the MCP bridge adds to a call, and how it holds up under 20 concurrent clients.

    .venv/bin/python bench/mcp.py [--calls N] [--clients 20] [--seconds 30]
        [--anchor-tree DIR [--anchor-uvicorn-args "..."]] [--uvicorn-args "..."]

In one run, on a scratch database (mailfathom_mcp_bench) holding one account of 2,000
emails: list_emails (page of 25) and search_emails (limit 20) called through /mcp with the
real `mcp` client over HTTP against uvicorn (one client session reused, as an assistant
would), each call interleaved with the same use case called directly in this process, so
a shared machine's load drifts over both alike. It prints p50/p95 and the bridge's added
p50 (target: under 5 ms), end to end and without the time the client spends checking the
result against the tool's output schema (work in the caller's process, which the server
cannot change). The same tools/call bytes are also POSTed without the mcp client, which
leaves the server and HTTP alone, and the CPU each side spent per call is printed (the
server's from /proc, so it holds on a loaded machine where wall times stretch). Then N
clients call list_emails concurrently for the given time: throughput, p50/p95 and errors.

--anchor-tree runs a second server from another checkout of the product (for example
`git archive <commit> | tar -x -C DIR`) beside this one on the same database: every
measured call is made to both in turn and the load phase alternates between them in
slices (ABBA), so the output carries the before/after ratio of one run.
--anchor-uvicorn-args / --uvicorn-args add uvicorn options to either server (for example
"--loop asyncio --http h11" to pin the pure-Python event loop and HTTP parser).
"""

from __future__ import annotations

import argparse
import os
import shlex
import statistics
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
# This file is named like the `mcp` package: keep its folder off the import path.
sys.path[:] = [entry for entry in sys.path if Path(entry or ".").resolve() != REPO / "bench"]
sys.path.insert(0, str(REPO))

from bench.sync import drop_database, migrated_database, setup_django  # noqa: E402
from bench.uvicorn_server import mcp_server_environment, percentile, start_server, stop_server  # noqa: E402

DATABASE = "mailfathom_mcp_bench"
EMAILS = 2000
WORDS = "invoice payment contract meeting schedule report budget travel approval review".split()
CALLS = [
    ("list_emails", {"pageSize": 25}),
    ("search_emails", {"queryText": "invoice payment", "resultLimit": 20}),
]


def seed() -> None:
    import random

    from accounts.models import FolderRole
    from mailbox.services.lexical_search import refresh_term_stats
    from tests.factories import MailAccountFactory
    from tests.mailbox.factories import EmailFactory, mapped_folder

    rng = random.Random(7)  # noqa: S311 (synthetic text, not secrets)
    account = MailAccountFactory(account_id="bench", display_name="Bench")
    inbox = mapped_folder(account, "inbox", FolderRole.INBOX)
    for n in range(EMAILS):
        words = " ".join(rng.choice(WORDS) for _ in range(60))
        EmailFactory(
            folder=inbox, subject=f"{rng.choice(WORDS)} {n}", body=words, to=[f"person{n % 50}@example.org"]
        )
    refresh_term_stats()


def process_cpu_ms(pid: int) -> float:
    """CPU time (user + system) the process has used so far, in milliseconds."""
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) * 1000 / os.sysconf("SC_CLK_TCK")


@dataclass
class Timings:
    """One server's calls of one tool: end to end, the client's own output-schema check, CPU."""

    total: list[float] = field(default_factory=list)
    checking: list[float] = field(default_factory=list)
    client_cpu: float = 0.0  # this process's CPU for all the calls, ms
    checking_cpu: float = 0.0  # of which the output-schema checks, ms
    server_cpu: float = 0.0  # the server process's CPU over the measured calls and raw POSTs, ms

    def without_check(self) -> list[float]:
        return [total - check for total, check in zip(self.total, self.checking, strict=True)]


def timed_checks(client) -> tuple[list[float], list[float]]:
    """Record how long the client spends validating each result against the output schema."""
    session = client.session
    original = session.validate_tool_result
    spent: list[float] = []
    cpu_spent: list[float] = []

    async def validate(name, result):
        cpu, started = time.thread_time(), time.perf_counter()
        try:
            await original(name, result)
        finally:
            spent.append((time.perf_counter() - started) * 1000)
            cpu_spent.append((time.thread_time() - cpu) * 1000)

    session.validate_tool_result = validate
    return spent, cpu_spent


async def single_session(
    urls: dict[str, str], pids: dict[str, int], key: str, direct: dict, count: int
) -> dict:
    """Per tool: direct timings and, per server, Timings; every /mcp call next to a direct one."""
    from contextlib import AsyncExitStack

    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    results: dict[str, dict] = {}
    async with AsyncExitStack() as stack:
        clients, checks, raws = {}, {}, {}
        sent: list = []  # the client's requests, so a raw POST can send the very same bytes

        async def keep(request) -> None:
            sent.append((dict(request.headers), request.content))

        for label, url in urls.items():
            http = await stack.enter_async_context(
                httpx2.AsyncClient(
                    headers={"Authorization": f"Bearer {key}"}, timeout=60, event_hooks={"request": [keep]}
                )
            )
            clients[label] = await stack.enter_async_context(
                Client(streamable_http_client(url, http_client=http))
            )
            checks[label] = timed_checks(clients[label])
            raws[label] = await stack.enter_async_context(httpx2.AsyncClient(timeout=60))
        for name, arguments in CALLS:
            for client in clients.values():
                await client.call_tool(name, arguments)  # warm-up (lists the tools once)
            headers, body = next(item for item in reversed(sent) if b'"tools/call"' in item[1])
            headers = {k: v for k, v in headers.items() if k.lower() not in ("content-length", "host")}
            direct[name]()
            for spent, cpu_spent in checks.values():
                spent.clear()
                cpu_spent.clear()
            measured = {
                "direct": [],
                "direct_cpu": 0.0,
                **{label: Timings() for label in clients},
                **{f"{label} raw": [] for label in clients},
            }
            server_cpu = {label: process_cpu_ms(pids[label]) for label in clients}
            for n in range(count):
                # Alternate who goes first, so neither always follows the other.
                order = ["direct", *clients] if n % 2 == 0 else [*clients, "direct"]
                for label in clients:  # the same request's bytes, posted without the mcp client
                    started = time.perf_counter()
                    response = await raws[label].post(urls[label], content=body, headers=headers)
                    answer = response.json()
                    measured[f"{label} raw"].append((time.perf_counter() - started) * 1000)
                    assert response.status_code == 200 and not answer["result"].get("isError"), answer
                for label in order:
                    cpu, started = time.thread_time(), time.perf_counter()
                    if label == "direct":
                        direct[name]()
                        measured["direct"].append((time.perf_counter() - started) * 1000)
                        measured["direct_cpu"] += (time.thread_time() - cpu) * 1000
                        continue
                    result = await clients[label].call_tool(name, arguments)
                    measured[label].total.append((time.perf_counter() - started) * 1000)
                    measured[label].client_cpu += (time.thread_time() - cpu) * 1000
                    assert not result.is_error, result
            for label in clients:
                measured[label].checking = list(checks[label][0])
                measured[label].checking_cpu = sum(checks[label][1])
                measured[label].server_cpu = process_cpu_ms(pids[label]) - server_cpu[label]
            results[name] = measured
    return results


BUSY = "MailFathom error 54002:"


@dataclass
class LoadResult:
    seconds: float = 0.0
    durations: list[float] = field(default_factory=list)
    errors: int = 0
    busy: int = 0


async def load(url: str, key: str, clients: int, seconds: float, into: LoadResult) -> None:
    import anyio
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    ready = anyio.Event()
    opened, began, deadline = 0, 0.0, 0.0

    async def one_client() -> None:
        nonlocal opened, began, deadline
        async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {key}"}, timeout=60) as http:
            async with Client(streamable_http_client(url, http_client=http)) as client:
                await client.call_tool("list_emails", {"pageSize": 25})  # lists the tools once
                opened += 1
                if opened == clients:  # every client is connected: the clock starts now
                    began = time.perf_counter()
                    deadline = began + seconds
                    ready.set()
                await ready.wait()
                while time.perf_counter() < deadline:
                    started = time.perf_counter()
                    try:
                        result = await client.call_tool("list_emails", {"pageSize": 25})
                    except Exception:
                        into.errors += 1
                        continue
                    if result.is_error and result.content[0].text.startswith(BUSY):
                        into.busy += 1  # every call slot was taken: refused at once, retried later
                        await anyio.sleep(0.05)
                        continue
                    into.errors += bool(result.is_error)
                    into.durations.append((time.perf_counter() - started) * 1000)

    async with anyio.create_task_group() as group:
        for _ in range(clients):
            group.start_soon(one_client)
    into.seconds += time.perf_counter() - began


def report_single(results: dict, labels: list[str], count: int) -> None:
    print(
        f"{'call':<15}{'server':<8}{'direct p50':>11}{'/mcp p50':>10}{'p95':>8}"
        f"{'added p50':>11}{'ratio':>7}{'check p50':>11}{'added less check':>18}"
    )
    for name, measured in results.items():
        d50 = statistics.median(measured["direct"])
        for label in labels:
            timings: Timings = measured[label]
            m50, m95 = statistics.median(timings.total), percentile(timings.total, 0.95)
            c50 = statistics.median(timings.checking)
            less = statistics.median(timings.without_check())
            print(
                f"{name:<15}{label:<8}{d50:>11.1f}{m50:>10.1f}{m95:>8.1f}{m50 - d50:>11.1f}"
                f"{m50 / d50:>7.2f}{c50:>11.1f}{less - d50:>18.1f}"
            )
    print("target: the bridge adds under 5 ms p50")
    print("\nThe same tools/call bytes POSTed without the mcp client (server and HTTP only):")
    print(f"{'call':<15}{'server':<8}{'direct p50':>11}{'POST p50':>10}{'p95':>8}{'added p50':>11}")
    for name, measured in results.items():
        d50 = statistics.median(measured["direct"])
        for label in labels:
            raw = measured[f"{label} raw"]
            r50, r95 = statistics.median(raw), percentile(raw, 0.95)
            print(f"{name:<15}{label:<8}{d50:>11.1f}{r50:>10.1f}{r95:>8.1f}{r50 - d50:>11.1f}")
    print("\nCPU per call (ms): the direct call in this process; over /mcp, the server and the client")
    print("(the server's CPU is averaged over both its requests per call, the client's and the raw POST)")
    print(f"{'call':<15}{'server':<8}{'direct':>8}{'server':>8}{'client':>8}{'check':>8}{'added':>8}")
    for name, measured in results.items():
        direct_cpu = measured["direct_cpu"] / count
        for label in labels:
            timings: Timings = measured[label]
            # The server answered two requests per measured call: the mcp client's and the raw POST.
            server, client = timings.server_cpu / (2 * count), timings.client_cpu / count
            check = timings.checking_cpu / count
            print(
                f"{name:<15}{label:<8}{direct_cpu:>8.1f}{server:>8.1f}{client:>8.1f}{check:>8.1f}"
                f"{server + client - direct_cpu:>8.1f}"
            )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--clients", type=int, default=20)
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--slices", type=int, default=2, help="load slices per server with an anchor")
    parser.add_argument("--uvicorn-args", default="")
    parser.add_argument("--anchor-tree", type=Path)
    parser.add_argument("--anchor-uvicorn-args", default="")
    args = parser.parse_args()

    import anyio

    setup_django(DATABASE)
    migrated_database(DATABASE)
    from django.conf import settings

    settings.MAILFATHOM = settings.MAILFATHOM.replace(embedding_provider="none")
    seed()
    from accounts.services.mcp_keys import create_key
    from mailbox.services.search import search_emails
    from mailbox.services.timeline import list_emails

    key = create_key("bench").key
    env = mcp_server_environment(DATABASE)
    trees = {"this": (REPO, shlex.split(args.uvicorn_args))}
    if args.anchor_tree:
        trees["anchor"] = (args.anchor_tree.resolve(), shlex.split(args.anchor_uvicorn_args))
    servers = {label: start_server(tree, env, tuple(extra)) for label, (tree, extra) in trees.items()}
    # The direct calls run on this process's event loop, between awaited /mcp calls.
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    try:
        urls = {label: base + "/mcp" for label, (_, base) in servers.items()}
        direct = {
            "list_emails": lambda: list_emails(page_size=25),
            "search_emails": lambda: search_emails("invoice payment", result_limit=20),
        }
        pids = {label: process.pid for label, (process, _) in servers.items()}
        results = anyio.run(single_session, urls, pids, key, direct, args.calls)
        print(f"\n{EMAILS} emails, {args.calls} calls each, one client session per server (milliseconds)")
        print("check: the client validating the result against the output schema, in the caller\n")
        report_single(results, list(urls), args.calls)

        loads = {label: LoadResult() for label in urls}
        slices = args.slices if len(urls) > 1 else 1
        order = [label for n in range(slices) for label in (list(urls) if n % 2 == 0 else list(urls)[::-1])]
        for label in order:
            anyio.run(load, urls[label], key, args.clients, args.seconds / slices, loads[label])
        print(f"\nload: {args.clients} clients x {args.seconds:.0f} s of list_emails per server:")
        for label, result in loads.items():
            p50, p95 = statistics.median(result.durations), percentile(result.durations, 0.95)
            rate = len(result.durations) / result.seconds
            print(
                f"  {label:<7}{rate:.1f} calls/s, p50 {p50:.1f} ms, p95 {p95:.1f} ms, "
                f"{result.errors} errors, {result.busy} refused with 54002 (retried after 50 ms)"
            )
        if "anchor" in loads:
            rates = {label: len(r.durations) / r.seconds for label, r in loads.items()}
            print(f"  throughput this / anchor: {rates['this'] / rates['anchor']:.2f}")
    finally:
        for process, _ in servers.values():
            stop_server(process)
        drop_database(DATABASE)


if __name__ == "__main__":
    main()

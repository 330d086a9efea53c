"""What the MCP bridge adds to a call, and how it holds up under 20 concurrent clients.

    .venv/bin/python bench/mcp.py [--calls N] [--clients 20] [--seconds 30]

In one run, on a scratch database (mailfathom_mcp_bench) holding one account of 2,000
emails: the list_emails (page of 25) and search_emails (limit 20) use cases called
directly, then the same calls through /mcp with the real `mcp` client over HTTP against
uvicorn (one client session reused, as an assistant would), printing p50/p95 and the
bridge's added p50 (target: under 5 ms). Then N clients call list_emails concurrently for
the given time: throughput, p95 and errors.
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
# This file is named like the `mcp` package: keep its folder off the import path.
sys.path[:] = [entry for entry in sys.path if Path(entry or ".").resolve() != REPO / "bench"]
sys.path.insert(0, str(REPO))


def _bench_helpers():  # type: ignore[no-untyped-def]
    import importlib.util

    spec = importlib.util.spec_from_file_location("bench_sync", REPO / "bench" / "sync.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["bench_sync"] = module  # dataclasses look their module up here
    spec.loader.exec_module(module)
    return module


_helpers = _bench_helpers()
drop_database, recreate_database, setup_django = (
    _helpers.drop_database,
    _helpers.recreate_database,
    _helpers.setup_django,
)

DATABASE = "mailfathom_mcp_bench"
EMAILS = 2000
WORDS = "invoice payment contract meeting schedule report budget travel approval review".split()


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


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def timed(call, count: int) -> list[float]:
    call()  # warm-up
    durations = []
    for _ in range(count):
        started = time.perf_counter()
        call()
        durations.append((time.perf_counter() - started) * 1000)
    return durations


def start_server(env: dict[str, str]) -> tuple[subprocess.Popen, str]:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "uvicorn",
            "mailfathom.asgi:application",
            "--port",
            str(port),
            "--no-access-log",
        ],
        cwd=REPO,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    base = f"http://127.0.0.1:{port}"
    for _ in range(300):
        try:
            urllib.request.urlopen(base + "/health", timeout=1)  # noqa: S310 (our own server)
            return process, base
        except OSError:
            time.sleep(0.2)
    process.kill()
    raise SystemExit("uvicorn did not start")


async def through_mcp(
    url: str, key: str, calls: list[tuple[str, dict]], count: int
) -> dict[str, list[float]]:
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    results: dict[str, list[float]] = {}
    async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {key}"}, timeout=60) as http:
        async with Client(streamable_http_client(url, http_client=http)) as client:
            for name, arguments in calls:
                await client.call_tool(name, arguments)  # warm-up
                durations = []
                for _ in range(count):
                    started = time.perf_counter()
                    result = await client.call_tool(name, arguments)
                    durations.append((time.perf_counter() - started) * 1000)
                    assert not result.is_error, result
                results[name] = durations
    return results


BUSY = "MailFathom error 54002:"


async def load(url: str, key: str, clients: int, seconds: float) -> tuple[int, int, list[float], int]:
    import anyio
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    durations: list[float] = []
    busy: list[int] = []
    errors = 0
    deadline = time.perf_counter() + seconds

    async def one_client() -> None:
        nonlocal errors
        async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {key}"}, timeout=60) as http:
            async with Client(streamable_http_client(url, http_client=http)) as client:
                while time.perf_counter() < deadline:
                    started = time.perf_counter()
                    try:
                        result = await client.call_tool("list_emails", {"pageSize": 25})
                    except Exception:
                        errors += 1
                        continue
                    if result.is_error and result.content[0].text.startswith(BUSY):
                        busy.append(1)  # every call slot was taken: refused at once, retried later
                        await anyio.sleep(0.05)
                        continue
                    errors += bool(result.is_error)
                    durations.append((time.perf_counter() - started) * 1000)

    async with anyio.create_task_group() as group:
        for _ in range(clients):
            group.start_soon(one_client)
    return len(durations), errors, durations, len(busy)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--clients", type=int, default=20)
    parser.add_argument("--seconds", type=float, default=30.0)
    args = parser.parse_args()

    import anyio

    setup_django(DATABASE)
    recreate_database(DATABASE)
    from django.conf import settings
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    settings.MAILFATHOM = settings.MAILFATHOM.replace(embedding_provider="none")
    seed()
    from accounts.services.mcp_keys import create_key
    from mailbox.services.search import search_emails
    from mailbox.services.timeline import list_emails

    key = create_key("bench").key
    params = settings.DATABASES["default"]
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "mailfathom.settings",
        "DATABASE_URL": f"postgres://{params['USER']}@/{DATABASE}?host={params['HOST']}",
        "DJANGO_SECRET_KEY": settings.SECRET_KEY,
        "MAILFATHOM_KEYRING": settings.MAILFATHOM_KEYRING,
        "MAILFATHOM_MCP_ENABLED": "true",
        "MAILFATHOM_MCP_AUTH": "api-key",
        "MAILFATHOM_EMBEDDING_PROVIDER": "none",
    }
    process, base = start_server(env)
    try:
        direct = {
            "list_emails": timed(lambda: list_emails(page_size=25), args.calls),
            "search_emails": timed(lambda: search_emails("invoice payment", result_limit=20), args.calls),
        }
        bridged = anyio.run(
            through_mcp,
            base + "/mcp",
            key,
            [
                ("list_emails", {"pageSize": 25}),
                ("search_emails", {"queryText": "invoice payment", "resultLimit": 20}),
            ],
            args.calls,
        )
        print(f"\n{EMAILS} emails, {args.calls} calls each, one client session (milliseconds)\n")
        print(
            f"{'call':<15}{'direct p50':>11}{'p95':>8}{'/mcp p50':>10}{'p95':>8}{'added p50':>11}{'ratio':>7}"
        )
        for name in direct:
            d50, d95 = statistics.median(direct[name]), percentile(direct[name], 0.95)
            m50, m95 = statistics.median(bridged[name]), percentile(bridged[name], 0.95)
            print(
                f"{name:<15}{d50:>11.1f}{d95:>8.1f}{m50:>10.1f}{m95:>8.1f}{m50 - d50:>11.1f}{m50 / d50:>7.2f}"
            )
        print("target: the bridge adds under 5 ms p50")
        count, errors, durations, busy = anyio.run(load, base + "/mcp", key, args.clients, args.seconds)
        p50, p95 = statistics.median(durations), percentile(durations, 0.95)
        print(f"\nload: {args.clients} clients x {args.seconds:.0f} s of list_emails:")
        print(f"  {count / args.seconds:.1f} calls/s, p50 {p50:.1f} ms, p95 {p95:.1f} ms, {errors} errors")
        print(f"  {busy} calls refused with 54002 (every call slot busy; each retried after 50 ms)")
    finally:
        process.terminate()
        process.wait(timeout=20)
        drop_database(DATABASE)


if __name__ == "__main__":
    main()

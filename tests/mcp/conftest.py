"""The MCP bridge under a real uvicorn, reached with the real `mcp` client over HTTP.

Each server is a uvicorn process serving mailfathom.asgi against this session's test
database, so rows a test commits (tests use transaction=True) are what the server reads.
Its log goes to a file the tests read, to check what was and was not written there.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from accounts.services.mcp_keys import create_key
from tests.support import database_url, free_port, wait_until_serving

ROOT = Path(__file__).resolve().parents[2]
# The key tests/conftest.py gives every test, so the server signs cursors with the same ring.
TEST_KEYRING = "Y2hhbmdlLW1lLXRoaXMtaXMtYS10ZXN0LWtleS0wMDA="

T = TypeVar("T")


@dataclass
class Server:
    """A running uvicorn serving mailfathom.asgi, and the file its log goes to."""

    process: subprocess.Popen
    base: str
    log_path: Path

    @property
    def url(self) -> str:
        return self.base + "/mcp"

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)


def server_env(**overrides: str) -> dict[str, str]:
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "mailfathom.settings",
        "DATABASE_URL": database_url(),
        "DJANGO_SECRET_KEY": "test-mcp-server",
        "MAILFATHOM_KEYRING": TEST_KEYRING,
        "MAILFATHOM_LOG_LEVEL": "INFO",
        "MAILFATHOM_EMBEDDING_PROVIDER": "none",
        "MAILFATHOM_MCP_ENABLED": "true",
        "MAILFATHOM_MCP_AUTH": "api-key",
    }
    env.pop("TEST_DATABASE_URL", None)
    env.update(overrides)
    return env


def start_server(
    log_path: Path,
    *,
    wait: bool = True,
    workers: int = 1,
    log_config: Path | None = None,
    **overrides: str,
) -> Server:
    """Start uvicorn with `overrides` in its environment; `workers` > 1 starts that many
    worker processes behind one socket, `log_config` replaces uvicorn's own logging setup."""
    port = free_port()
    command = [sys.executable, "-m", "uvicorn", "mailfathom.asgi:application", "--port", str(port)]
    if workers != 1:
        command += ["--workers", str(workers)]
    if log_config is not None:
        command += ["--log-config", str(log_config)]
    process = subprocess.Popen(
        command,
        cwd=ROOT,
        env=server_env(**overrides),
        stdout=subprocess.DEVNULL,
        stderr=open(log_path, "wb"),
    )
    server = Server(process=process, base=f"http://127.0.0.1:{port}", log_path=log_path)
    if wait:
        wait_until_serving(server.base, process, server.log, seconds=90)
    return server


def _server_factory(tmp_path_factory) -> tuple[Callable[..., Server], list[Server]]:
    servers: list[Server] = []

    def start(**overrides: str) -> Server:
        log_path = tmp_path_factory.mktemp("mcp-server") / "server.log"
        server = start_server(log_path, **overrides)
        servers.append(server)
        return server

    return start, servers


@pytest.fixture(scope="module")
def module_server_factory(django_db_setup, tmp_path_factory) -> Iterator[Callable[..., Server]]:
    """Start servers configured for one module (after the test database exists); stop them after it."""
    start, servers = _server_factory(tmp_path_factory)
    yield start
    for server in servers:
        server.stop()


@pytest.fixture(scope="session")
def mcp_server(django_db_setup, tmp_path_factory) -> Iterator[Server]:
    """The default server, shared by the session: /mcp enabled, API keys required."""
    start, servers = _server_factory(tmp_path_factory)
    yield start()
    for server in servers:
        server.stop()


@pytest.fixture
def api_key(db) -> str:
    return create_key("tests").key


# --- talking to /mcp ------------------------------------------------------------------------


def with_client(
    url: str,
    key: str | None,
    action: Callable[[Client], Awaitable[T]],
    *,
    mode: str = "auto",
    headers: dict[str, str] | None = None,
) -> T:
    """Open the real client on `url` (Bearer `key`), run `action` with it, and close it."""
    all_headers = dict(headers or {})
    if key is not None:
        all_headers["Authorization"] = f"Bearer {key}"

    async def run() -> T:
        async with httpx2.AsyncClient(headers=all_headers, timeout=httpx2.Timeout(30, read=120)) as http:
            async with Client(streamable_http_client(url, http_client=http), mode=mode) as client:
                return await action(client)

    try:
        return anyio.run(run)
    except BaseExceptionGroup as group:
        raise sole_error(group) from None


def sole_error(error: BaseException) -> BaseException:
    """The one error a chain of single-member task-group errors wraps (a JSON-RPC error, say)."""
    while isinstance(error, BaseExceptionGroup) and len(error.exceptions) == 1:
        error = error.exceptions[0]
    return error


def call_tool(server: Server, key: str, name: str, arguments: dict[str, Any] | None = None):
    async def action(client: Client):
        return await client.call_tool(name, arguments or {})

    return with_client(server.url, key, action)


def list_tools(server: Server, key: str, *, mode: str = "auto") -> list[dict[str, Any]]:
    async def action(client: Client):
        return await client.list_tools()

    result = with_client(server.url, key, action, mode=mode)
    return [tool.model_dump(mode="json", by_alias=True, exclude_none=True) for tool in result.tools]


def error_text(result) -> str:
    assert result.is_error, result
    assert len(result.content) == 1
    return result.content[0].text


def error_code(result) -> int:
    text = error_text(result)
    assert text.startswith("MailFathom error "), text
    return int(text.removeprefix("MailFathom error ")[:5])


def payload(result) -> dict[str, Any]:
    assert not result.is_error, result.content
    assert json.loads(result.content[0].text) == result.structured_content
    return result.structured_content


def post(
    server: Server, body: bytes, headers: dict[str, str] | None = None, path: str = "/mcp"
) -> tuple[int, bytes, Any]:
    """A raw POST, for what the client would not send (bad Origin, no key, huge body)."""
    request = urllib.request.Request(  # noqa: S310 - the test's own server
        server.base + path,
        data=body,
        method="POST",
        headers={
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
            **(headers or {}),
        },
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as response:  # noqa: S310
            return response.status, response.read(), response.headers
    except urllib.error.HTTPError as error:
        return error.code, error.read(), error.headers


INITIALIZE = json.dumps(
    {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "raw-test", "version": "1"},
        },
    }
).encode()

"""The MCP bridge reached with the real `mcp` client over HTTP, on the uvicorn servers of
tests/mcp/servers.py; and one scripted OpenAI-compatible server per module, as the
module-scoped servers that embed with it need.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import urllib.error
import urllib.request
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from tests.mcp.servers import ROOT, Server
from tests.providers.openai_server import ScriptedOpenAIServer
from tests.support import scripted_openai_server

T = TypeVar("T")


@pytest.fixture(scope="module")
def scripted() -> Iterator[ScriptedOpenAIServer]:
    """One scripted server for a module's uvicorn servers, which are module-scoped too."""
    with scripted_openai_server() as server:
        yield server


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


# --- mcp-remote, Claude Desktop's bridge ------------------------------------------------------

# The version the snippet and docs/operations/mcp-endpoint.md were checked with.
MCP_REMOTE = "mcp-remote@0.15.1"


@pytest.fixture(scope="session")
def mcp_remote() -> Path:
    """mcp-remote's entry point, installed from npm under var/ once (like Dovecot, set up by the tests)."""
    prefix = ROOT / "var" / "npm"
    entry = prefix / "node_modules" / "mcp-remote" / "dist" / "proxy.js"
    if not entry.exists():
        npm = shutil.which("npm")
        if npm is None or shutil.which("node") is None:
            pytest.fail(
                "Node.js and npm are not installed, so mcp-remote cannot run: run `.ci/install-services` "
                "(as root) once, or `make test`, which runs it.",
                pytrace=False,
            )
        subprocess.run(
            [npm, "install", "--prefix", str(prefix), "--no-audit", "--no-fund", MCP_REMOTE],
            check=True,
            capture_output=True,
            timeout=600,
        )
    return entry

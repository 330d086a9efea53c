"""The product's ASGI app under a real uvicorn, as the MCP, audit and browser tests start it.

Each server is a uvicorn process serving mailfathom.asgi against this session's test
database, so rows a test commits (tests use transaction=True) are what the server reads.
Its log goes to a file the tests read, to check what was and was not written there.
The fixtures here (module_server_factory, mcp_server, api_key) are registered for the whole
suite by tests/conftest.py.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from accounts.services.mcp_keys import create_key
from tests.support import database_url, free_port, wait_until_serving

ROOT = Path(__file__).resolve().parents[2]
# The key tests/conftest.py gives every test, so the server signs cursors with the same ring.
TEST_KEYRING = "Y2hhbmdlLW1lLXRoaXMtaXMtYS10ZXN0LWtleS0wMDA="


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

"""What the MCP benchmarks share: a uvicorn serving the product, the environment it needs, a percentile."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path


def percentile(values: list[float], share: float) -> float:
    """The value below which `share` of `values` lie (nearest rank); NaN for no values."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def mcp_server_environment(database: str) -> dict[str, str]:
    """The environment for a served product on this process's `database`, Redis and keys: MCP on, behind
    an API key, with no embedder. Call it once Django is set up."""
    from django.conf import settings

    params = settings.DATABASES["default"]
    return {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "mailfathom.settings",
        "DATABASE_URL": f"postgres://{params['USER']}@/{database}?host={params['HOST']}",
        "REDIS_URL": settings.REDIS_URL,
        "DJANGO_SECRET_KEY": settings.SECRET_KEY,
        "MAILFATHOM_KEYRING": settings.MAILFATHOM_KEYRING,
        "MAILFATHOM_MCP_ENABLED": "true",
        "MAILFATHOM_MCP_AUTH": "api-key",
        "MAILFATHOM_EMBEDDING_PROVIDER": "none",
    }


def start_server(
    tree: Path, env: dict[str, str], extra: tuple[str, ...] = (), app: str = "mailfathom.asgi:application"
) -> tuple[subprocess.Popen, str]:
    """uvicorn serving `app` from `tree` on a free port, once /health answers; (process, base URL)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    command = [sys.executable, "-m", "uvicorn", app, "--port", str(port)]
    process = subprocess.Popen(
        [*command, "--no-access-log", *extra],
        cwd=tree,
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
    raise SystemExit(f"uvicorn did not start in {tree}")


def stop_server(process: subprocess.Popen) -> None:
    """Ask uvicorn to shut down and wait for it (it finishes the requests in flight)."""
    process.terminate()
    process.wait(timeout=20)

"""ASGI entrypoint: Django for every path but /mcp, which the MCP bridge serves.

Django's ASGI handler refuses the `lifespan` scope, so a small dispatcher routes `lifespan`
and `/mcp`, `/mcp/...` to the MCP app (whose lifespan runs the SDK's session manager) and
everything else to Django. A Starlette Mount would not do: POST /mcp would fall through to
Django. While MAILFATHOM_MCP_ENABLED is false the MCP app is not even built: `/mcp`
answers 404 and the lifespan is answered here.

The local embedding model starts loading as this module is imported, and the server's
startup (the lifespan's startup event) waits for it, so the process takes no request before
a hybrid search can embed its query at once (MAILFATHOM_EMBEDDING_WARM_START).
"""

from __future__ import annotations

import asyncio
import os
from typing import Any

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "mailfathom.settings")

from django.conf import settings
from django.core.asgi import get_asgi_application
from django.core.management import call_command

django_app = get_asgi_application()
call_command("check")  # refuse to serve a misconfigured deployment (an MCP posture included)

from mailfathom.providers import warm_embedder  # noqa: E402  (after Django is set up)

warm_embedder(wait=False)  # loads while the rest is imported; startup waits for it below

if settings.MAILFATHOM.mcp_enabled:
    from mailfathom.mcp.http import build_mcp_app

    mcp_app = build_mcp_app()
else:
    mcp_app = None

Scope = dict[str, Any]

MCP_PATH = "/mcp"


def is_mcp_path(path: str) -> bool:
    return path == MCP_PATH or path.startswith(MCP_PATH + "/")


async def _not_found(scope: Scope, receive: Any, send: Any) -> None:
    await send(
        {
            "type": "http.response.start",
            "status": 404,
            "headers": [(b"content-type", b"application/json")],
        }
    )
    await send({"type": "http.response.body", "body": b'{"error": "not found"}'})


async def _lifespan(scope: Scope, receive: Any, send: Any) -> None:
    while True:
        message = await receive()
        if message["type"] == "lifespan.startup":
            await send({"type": "lifespan.startup.complete"})
        elif message["type"] == "lifespan.shutdown":
            await send({"type": "lifespan.shutdown.complete"})
            return


def _warm_before_startup(receive: Any) -> Any:
    """`receive`, holding back the lifespan's startup event until the embedder has loaded."""

    async def receive_when_warm() -> Any:
        message = await receive()
        if message["type"] == "lifespan.startup":
            await asyncio.to_thread(warm_embedder, wait=True)
        return message

    return receive_when_warm


async def application(scope: Scope, receive: Any, send: Any) -> None:
    if scope["type"] == "lifespan":
        await (mcp_app or _lifespan)(scope, _warm_before_startup(receive), send)
    elif scope["type"] == "http" and is_mcp_path(scope["path"]):
        await (mcp_app or _not_found)(scope, receive, send)
    else:
        await django_app(scope, receive, send)

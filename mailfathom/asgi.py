"""ASGI entrypoint: Django for every path but /mcp, which the MCP bridge will serve.

Django's ASGI handler refuses the `lifespan` scope, so a small dispatcher answers it and
routes `/mcp` and `/mcp/...` apart. Until the MCP issue lands, or while
MAILFATHOM_MCP_ENABLED is false, `/mcp` answers 404.
"""

from __future__ import annotations

import os
from typing import Any

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "mailfathom.settings")

from django.core.asgi import get_asgi_application  # noqa: E402
from django.core.management import call_command  # noqa: E402

django_app = get_asgi_application()
call_command("check")  # refuse to serve a misconfigured deployment

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


async def application(scope: Scope, receive: Any, send: Any) -> None:
    if scope["type"] == "lifespan":
        await _lifespan(scope, receive, send)
    elif scope["type"] == "http" and is_mcp_path(scope["path"]):
        await _not_found(scope, receive, send)
    else:
        await django_app(scope, receive, send)

"""Running the bridge in process with stand-in tools, tools whose use cases a test writes."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import anyio
from mcp import Client
from mcp.server import Server

from mailfathom.core.wire import WireModel
from mailfathom.mcp.tools import ToolSpec
from tests.mcp.conftest import sole_error


class Echo(WireModel):
    value: str


def stand_in_tool(name: str, use_case: Callable[[], Echo], **fields: Any) -> ToolSpec:
    """A published tool of no arguments answering an Echo; `fields` sets any other ToolSpec field."""
    return ToolSpec(
        name=name,
        title=name,
        description="A stand-in tool.",
        arguments=(),
        result_model=Echo,
        use_case=use_case,
        **fields,
    )


def in_process(server: Server[Any], action: Callable[[Client], Awaitable[Any]]) -> Any:
    """Run `action` with the SDK's in-memory client connected to `server`; its one error raised bare."""

    async def main() -> Any:
        async with Client(server, mode="legacy") as client:
            return await action(client)

    try:
        return anyio.run(main)
    except BaseExceptionGroup as group:
        raise sole_error(group) from None

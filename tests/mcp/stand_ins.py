"""Stand-in tools for running the bridge in process: a tool whose use case a test writes."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from mailfathom.core.wire import WireModel
from mailfathom.mcp.tools import ToolSpec


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

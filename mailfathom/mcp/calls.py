"""The one call filter around every tool call: what it records, logs and measures.

Each tools/call yields one log line and two OpenTelemetry instruments (a counter and a
duration histogram) with the tool name, outcome, code and duration. The name a call arrived
with is caller text, shown only when this server publishes that tool, else PLACEHOLDER, so a
caller can neither write into the log nor create a time series. Outcomes: ok, refused,
failed (54001, detail logged here), unavailable (54003), cancelled and protocol_error
(re-raised). Without an SDK meter provider the instruments record nothing.
"""

from __future__ import annotations

import contextvars
import logging
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import anyio
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_PARAMS
from opentelemetry import metrics, trace
from pydantic import ValidationError

logger = logging.getLogger("mailfathom.mcp.calls")

PLACEHOLDER = "(unrecognized)"

OK, REFUSED, FAILED, CANCELLED, PROTOCOL_ERROR = "ok", "refused", "failed", "cancelled", "protocol_error"
UNAVAILABLE = "unavailable"  # 54003: the database or Redis could not be reached

_meter = metrics.get_meter("mailfathom.mcp")
CALLS = _meter.create_counter(
    "mailfathom.mcp.tool.calls", unit="{call}", description="MCP tool calls, by tool, outcome and code."
)
DURATION = _meter.create_histogram(
    "mailfathom.mcp.tool.duration", unit="s", description="Duration of MCP tool calls."
)
_tracer = trace.get_tracer("mailfathom.mcp")


class Refusal(MCPError):
    """A JSON-RPC error that answers the caller's own mistake: recorded as refused, not failed."""


def recorded_name(name: object, published: frozenset[str]) -> str:
    """The name as the log and the instruments may show it: a published one, or the placeholder."""
    return name if isinstance(name, str) and name in published else PLACEHOLDER


@dataclass
class CallRecord:
    """What one call did; the tools/call handler fills in outcome and code."""

    name: str  # a published tool's name or PLACEHOLDER, never other caller text
    trace_id: str
    outcome: str = OK
    code: int | None = None
    started: float = field(default_factory=time.perf_counter)


_current: contextvars.ContextVar[CallRecord | None] = contextvars.ContextVar("mcp_call", default=None)


def current_call() -> CallRecord | None:
    """The record of the tools/call being handled, if any."""
    return _current.get()


def settle(outcome: str, code: int | None = None) -> None:
    """Record how the current call ended (called by the tools/call handler)."""
    record = _current.get()
    if record is not None:
        record.outcome, record.code = outcome, code


class CallFilter:
    """Server middleware: wraps every tools/call in the record/log/measure described above."""

    def __init__(self, published: frozenset[str]) -> None:
        self.published = published

    async def __call__(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        if ctx.method != "tools/call":
            return await call_next(ctx)
        name = ctx.params.get("name") if isinstance(ctx.params, Mapping) else None
        measured = recorded_name(name, self.published)
        with _tracer.start_as_current_span(
            f"tools/call {measured}", record_exception=False, set_status_on_exception=False
        ) as span:
            span_context = span.get_span_context()
            trace_id = format(span_context.trace_id, "032x") if span_context.is_valid else uuid.uuid4().hex
            record = CallRecord(name=measured, trace_id=trace_id)
            token = _current.set(record)
            try:
                return await call_next(ctx)
            except anyio.get_cancelled_exc_class():
                record.outcome, record.code = CANCELLED, None
                raise
            except Refusal as error:
                record.outcome, record.code = REFUSED, error.error.code
                raise
            except MCPError as error:
                record.outcome, record.code = PROTOCOL_ERROR, error.error.code
                raise
            except ValidationError:
                record.outcome, record.code = PROTOCOL_ERROR, INVALID_PARAMS
                raise
            except Exception:
                record.outcome, record.code = FAILED, None
                logger.exception("mcp call failed outside the tool handler trace=%s", trace_id)
                raise
            finally:
                _current.reset(token)
                _finish(record, span)


def _finish(record: CallRecord, span: trace.Span) -> None:
    duration = time.perf_counter() - record.started
    code = "-" if record.code is None else str(record.code)
    logger.info(
        "mcp call tool=%s outcome=%s code=%s duration_ms=%.1f trace=%s",
        record.name,
        record.outcome,
        code,
        duration * 1000,
        record.trace_id,
    )
    attributes = {"mcp.tool": record.name, "mcp.outcome": record.outcome, "mcp.code": code}
    CALLS.add(1, attributes)
    DURATION.record(duration, attributes)
    span.set_attributes(attributes)

"""The product's ASGI app with a stopwatch on each /mcp POST, for bench/mcp_load.py only.

    uvicorn bench.mcp_timing:application

Each POST to /mcp is split into three parts: the time it waited for a call slot, the time
its use case ran on the worker thread, and everything else, which is the server's own share
(HTTP, the gates, the SDK's request handling, argument conversion, publishing the result,
the thread hop, the Django request framing). GET /__timings answers the parts of every
POST that ran a use case since the last GET, in milliseconds, and starts a new list.
Setting MAILFATHOM_BENCH_PROFILE to a file name also runs cProfile over the whole process
and writes its stats there on every GET /__timings (the event loop's thread only).
"""

from __future__ import annotations

import contextvars
import cProfile
import json
import os
import sys
import time
from typing import Any

from mailfathom.mcp import execution

_span: contextvars.ContextVar[dict[str, Any] | None] = contextvars.ContextVar("bench_span", default=None)
_spans: list[dict[str, Any]] = []
_profile_path = os.environ.get("MAILFATHOM_BENCH_PROFILE", "")
_profile = cProfile.Profile() if _profile_path else None

_acquire = execution.CallSlots.acquire
_call = execution.UseCaseRunner.call


async def _timed_acquire(self: execution.CallSlots) -> None:
    span, started = _span.get(), time.perf_counter()
    await _acquire(self)
    if span is not None:
        span["wait"] = (time.perf_counter() - started) * 1000


async def _timed_call(self: execution.UseCaseRunner, function: Any, *args: Any, **kwargs: Any) -> Any:
    """A tool call's use case, timed on its worker thread (key checks and side reads are not)."""
    span = _span.get()

    def timed(*inner_args: Any, **inner_kwargs: Any) -> Any:
        started = time.perf_counter()
        try:
            return function(*inner_args, **inner_kwargs)
        finally:
            if span is not None:
                span["use_case"] = (time.perf_counter() - started) * 1000
                span["name"] = getattr(function, "__name__", "?")

    return await _call(self, timed, *args, **kwargs)


execution.CallSlots.acquire = _timed_acquire  # type: ignore[method-assign]  # the bench times the real method in place
execution.UseCaseRunner.call = _timed_call  # type: ignore[method-assign]  # the bench times the real method in place
if os.environ.get("MAILFATHOM_BENCH_SWITCH_INTERVAL"):
    sys.setswitchinterval(float(os.environ["MAILFATHOM_BENCH_SWITCH_INTERVAL"]))

if _profile is not None:
    # cProfile sees the thread that enables it: the event loop, where the server's own share
    # runs. The use cases run on worker threads and are not in this profile.
    _profile.enable()

from mailfathom.asgi import application as product  # noqa: E402


async def _answer_timings(send: Any) -> None:
    spans = list(_spans)
    _spans.clear()
    if _profile is not None:
        _profile.disable()
        _profile.dump_stats(_profile_path)
        _profile.enable()
    body = json.dumps(spans).encode()
    await send(
        {"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"application/json")]}
    )
    await send({"type": "http.response.body", "body": body})


async def application(scope: dict[str, Any], receive: Any, send: Any) -> None:
    if scope["type"] != "http":
        await product(scope, receive, send)
        return
    if scope["path"] == "/__timings":
        await _answer_timings(send)
        return
    if scope["path"] != "/mcp" or scope["method"] != "POST":
        await product(scope, receive, send)
        return
    span: dict[str, Any] = {}
    token = _span.set(span)
    started = time.perf_counter()
    try:
        await product(scope, receive, send)
    finally:
        _span.reset(token)
        if "use_case" in span:
            span["total"] = (time.perf_counter() - started) * 1000
            span["own"] = span["total"] - span.get("wait", 0.0) - span["use_case"]
            _spans.append(span)

"""Running synchronous use cases from the async MCP server, a bounded number at a time.

Use cases use the ORM, which must not run on the event loop, so each runs in a worker
thread through asgiref's sync_to_async. The threads are a pool of its own whose size is the
limit on concurrent calls: each worker holds at most one database connection, and a call
past the limit waits for a free worker (within the request timeout) rather than opening
another connection. A call abandoned by the timeout keeps its worker until the use case
returns, so abandoned work still counts against the limit.

Every run is framed by Django's request_started and request_finished signals, as a Django
request is, so connections are reset and closed per CONN_MAX_AGE and a broken one is not
reused by the next call on that thread.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from asgiref.sync import sync_to_async
from django.core.signals import request_finished, request_started

T = TypeVar("T")


def _framed(function: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    request_started.send(sender=UseCaseRunner)
    try:
        return function(*args, **kwargs)
    finally:
        request_finished.send(sender=UseCaseRunner)


class UseCaseRunner:
    """Run synchronous callables on a pool of `max_workers` threads."""

    def __init__(self, max_workers: int) -> None:
        self.max_workers = max_workers
        self._executor = ThreadPoolExecutor(max_workers=max_workers, thread_name_prefix="mcp-call")

    async def run(self, function: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        framed = sync_to_async(_framed, thread_sensitive=False, executor=self._executor)
        return await framed(function, *args, **kwargs)

    def shutdown(self) -> None:
        self._executor.shutdown(wait=False, cancel_futures=True)

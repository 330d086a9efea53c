"""Running synchronous use cases from the async MCP server, a bounded number at a time.

The ORM must not run on the event loop, so each call runs on a worker thread of its own pool,
sized by MAILFATHOM_MCP_MAX_CONCURRENT_CALLS. A call finding every slot taken is refused at
once with 54002 rather than queued, so the client chooses when to retry; a slot is held until
the use case returns, even after the request timed out. Reads that are not tool calls use a
small side pool. Each run is framed by request_started/request_finished, so connections are
reset as for a Django request.
"""

from __future__ import annotations

import asyncio
import contextvars
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from functools import partial
from typing import Any, TypeVar

from asgiref.sync import sync_to_async
from django.core.signals import request_finished, request_started

from mailfathom.core.errors import Code, MailFathomError

T = TypeVar("T")

SERVER_BUSY = Code.SERVER_BUSY
SERVER_BUSY_MESSAGE = Code.SERVER_BUSY.sentence
# Advertisement reads are a local lookup each; two threads keep one slow read from
# holding up every tools/list without adding many database connections.
SIDE_WORKERS = 2


def _framed(function: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    request_started.send(sender=UseCaseRunner)
    try:
        return function(*args, **kwargs)
    finally:
        request_finished.send(sender=UseCaseRunner)


class UseCaseRunner:
    """Run tool calls on `max_workers` slots (refusing past them) and side reads beside them."""

    def __init__(self, max_workers: int) -> None:
        self.max_workers = max_workers
        self._executor = ThreadPoolExecutor(max_workers=max_workers, thread_name_prefix="mcp-call")
        self._side = ThreadPoolExecutor(max_workers=SIDE_WORKERS, thread_name_prefix="mcp-side")
        self._slots = threading.BoundedSemaphore(max_workers)

    async def call(self, function: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """Run a tool call's use case on a free slot, or refuse it with 54002 without waiting.

        The slot is given back when the worker is done with the function (or when the
        submission is cancelled before it started), whatever became of the awaiting caller.
        """
        if not self._slots.acquire(blocking=False):
            raise MailFathomError(SERVER_BUSY, SERVER_BUSY_MESSAGE)
        work = partial(_framed, function, *args, **kwargs)
        try:
            future: Future[T] = self._executor.submit(contextvars.copy_context().run, work)
        except BaseException:
            self._slots.release()
            raise
        future.add_done_callback(lambda _: self._slots.release())
        return await asyncio.wrap_future(future)

    async def run(self, function: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """Run `function` on this runner's threads, waiting for one rather than refusing.

        For a runner of its own that queues by design (the key checks of BearerKeyGate),
        never for tool calls, which take a slot through `call`.
        """
        framed = sync_to_async(_framed, thread_sensitive=False, executor=self._executor)
        return await framed(function, *args, **kwargs)

    async def read(self, function: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """Run a read that is not a tool call on the side pool, waiting for it; never refused."""
        framed = sync_to_async(_framed, thread_sensitive=False, executor=self._side)
        return await framed(function, *args, **kwargs)

    def shutdown(self) -> None:
        self._executor.shutdown(wait=False, cancel_futures=True)
        self._side.shutdown(wait=False, cancel_futures=True)

"""Running synchronous use cases from the async MCP server, a bounded number at a time.

The ORM must not run on the event loop, so each call runs on a worker thread of its own pool.
The quick tools share MAILFATHOM_MCP_MAX_CONCURRENT_CALLS slots, by default one per CPU: their
use cases are Python that holds the interpreter lock between database round trips, so more
threads than cores add no throughput, only more threads for the event loop to wait behind
whenever it needs the lock back (docs/benchmarks.md, "MCP under load"). ask_mail and
draft_reply spend seconds waiting on models and have MAILFATHOM_MCP_MAX_CONCURRENT_MODEL_CALLS
slots of their own, so questions never hold up a listing. A call finding every slot of its
kind taken waits for one, first come first served, for at most
MAILFATHOM_MCP_SLOT_WAIT_SECONDS, and is then refused with 54002; so is a call arriving while
MAILFATHOM_MCP_MAX_WAITING_CALLS calls already wait (and every call, at once, while the wait
is 0). A waiting call that is cancelled (its client went away, the request timed out) leaves
the queue. A slot is held until the use case returns, even after the request timed out.
Reads that are not tool calls use a small side pool. Each run is framed by
request_started/request_finished, so connections are reset as for a Django request.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
import os
import threading
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from functools import partial
from typing import Any, TypeVar

import anyio
from asgiref.sync import sync_to_async
from django.core.signals import request_finished, request_started

from mailfathom.core.config import MOST_QUICK_SLOTS_BY_DEFAULT
from mailfathom.core.errors import Code, MailFathomError

logger = logging.getLogger("mailfathom.mcp")

T = TypeVar("T")

SERVER_BUSY = Code.SERVER_BUSY
# The refusal with no wait (MAILFATHOM_MCP_SLOT_WAIT_SECONDS 0): the text 54002 always had.
SERVER_BUSY_MESSAGE = Code.SERVER_BUSY.message(state="is in use")
QUEUE_FULL_MESSAGE = Code.SERVER_BUSY.message(state="is in use and the queue for one is full")
# Advertisement reads are a local lookup each; two threads keep one slow read from
# holding up every tools/list without adding many database connections.
SIDE_WORKERS = 2


def quick_slot_count(configured: int) -> int:
    """The quick tools' slots: `configured`, or for 0 one per usable CPU up to MOST_QUICK_SLOTS_BY_DEFAULT."""
    if configured > 0:
        return configured
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        cpus = os.cpu_count() or 1
    return max(1, min(cpus, MOST_QUICK_SLOTS_BY_DEFAULT))


def waited_message(seconds: float) -> str:
    """54002's sentence for a call that waited `seconds` for a slot and got none."""
    return Code.SERVER_BUSY.message(state=f"stayed in use for {seconds:g} s")


class CallSlots:
    """`count` slots handed out first come first served, with a bounded wait and a bounded queue.

    A slot is taken on the event loop and given back from any thread (the worker's done
    callback). A freed slot goes straight to the oldest waiter, so a call arriving later
    cannot take it first. A waiter that is cancelled or times out leaves the queue; if a slot
    was handed to it in that instant, it passes the slot on.
    """

    def __init__(self, count: int, wait_seconds: float = 0.0, max_waiting: int = 0) -> None:
        self.count, self.wait_seconds, self.max_waiting = count, wait_seconds, max_waiting
        self._free = count
        self._lock = threading.Lock()
        self._waiters: deque[tuple[asyncio.AbstractEventLoop, asyncio.Future[None]]] = deque()

    @property
    def waiting(self) -> int:
        """How many calls wait for a slot right now."""
        return len(self._waiters)

    @property
    def free(self) -> int:
        """How many slots no call holds right now."""
        return self._free

    async def acquire(self) -> None:
        """Take a slot, waiting for one within the bounds, or raise 54002."""
        with self._lock:
            if self._free > 0 and not self._waiters:
                self._free -= 1
                return
            if self.wait_seconds <= 0 or self.max_waiting <= 0:
                raise MailFathomError(SERVER_BUSY, SERVER_BUSY_MESSAGE)
            if len(self._waiters) >= self.max_waiting:
                raise MailFathomError(SERVER_BUSY, QUEUE_FULL_MESSAGE)
            loop = asyncio.get_running_loop()
            entry = (loop, loop.create_future())
            self._waiters.append(entry)
            waiting = len(self._waiters)
        logger.debug("mcp: call waits for a slot, %d waiting", waiting)
        waiter = entry[1]
        try:
            with anyio.fail_after(self.wait_seconds):
                await waiter
        except TimeoutError:
            self._leave(entry)
            raise MailFathomError(SERVER_BUSY, waited_message(self.wait_seconds)) from None
        except BaseException:
            self._leave(entry)
            raise

    def _leave(self, entry: tuple[asyncio.AbstractEventLoop, asyncio.Future[None]]) -> None:
        """Take a waiter that gave up out of the queue; pass on a slot handed to it meanwhile."""
        with self._lock:
            try:
                self._waiters.remove(entry)
                return
            except ValueError:
                pass  # a slot was handed to it: _hand_over has run, or will and pass it on
        waiter = entry[1]
        if waiter.done() and not waiter.cancelled():
            self.release()

    def release(self) -> None:
        """Give a slot back: to the oldest waiter, or to the free count. Safe from any thread."""
        with self._lock:
            while self._waiters:
                loop, waiter = self._waiters.popleft()
                if waiter.done():
                    continue  # gave up; its _leave finds it gone and owns nothing
                try:
                    loop.call_soon_threadsafe(self._hand_over, waiter)
                    return
                except RuntimeError:
                    continue  # its event loop is closed
            self._free += 1

    def _hand_over(self, waiter: asyncio.Future[None]) -> None:
        if waiter.done():
            self.release()  # it gave up after being chosen: the next one gets the slot
        else:
            waiter.set_result(None)


def _framed(function: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    request_started.send(sender=UseCaseRunner)
    try:
        return function(*args, **kwargs)
    finally:
        request_finished.send(sender=UseCaseRunner)


class UseCaseRunner:
    """Run tool calls on `max_workers` slots (waiting or refused past them) and side reads beside them.

    `wait_seconds` and `max_waiting` bound how long, and how many, calls wait for a slot
    (CallSlots); with the defaults a call finding every slot taken is refused at once.
    """

    def __init__(
        self, max_workers: int, wait_seconds: float = 0.0, max_waiting: int = 0, name: str = "mcp-call"
    ) -> None:
        self.max_workers = max_workers
        self._executor = ThreadPoolExecutor(max_workers=max_workers, thread_name_prefix=name)
        # Threads start on first use, so a runner whose side pool is never read costs nothing.
        self._side = ThreadPoolExecutor(max_workers=SIDE_WORKERS, thread_name_prefix="mcp-side")
        self.slots = CallSlots(max_workers, wait_seconds, max_waiting)

    async def call(self, function: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """Run a tool call's use case on a slot, waiting for one within the bounds, or raise 54002.

        The slot is given back when the worker is done with the function (or when the
        submission is cancelled before it started), whatever became of the awaiting caller.
        """
        await self.slots.acquire()
        work = partial(_framed, function, *args, **kwargs)
        try:
            future: Future[T] = self._executor.submit(contextvars.copy_context().run, work)
        except BaseException:
            self.slots.release()
            raise
        future.add_done_callback(lambda _: self.slots.release())
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

"""The call queue: a call finding every slot busy waits for one, within two bounds.

A call that finds all MAILFATHOM_MCP_MAX_CONCURRENT_CALLS slots taken waits, first come
first served, up to MAILFATHOM_MCP_SLOT_WAIT_SECONDS; one arriving while
MAILFATHOM_MCP_MAX_WAITING_CALLS calls already wait is refused at once with 54002. (A wait
of 0 keeps the old rule, tests/mcp/test_call_slots.py.) The server tests hold the only slot
with a call blocked on a table lock, as test_call_slots does, and see a call start waiting
in the server's debug log, so nothing here depends on how long anything takes.
"""

from __future__ import annotations

import threading
from typing import Any

import anyio
import pytest

from mailfathom.core.errors import MailFathomError
from mailfathom.mcp.execution import (
    QUEUE_FULL_MESSAGE,
    SERVER_BUSY,
    CallSlots,
    UseCaseRunner,
    waited_message,
)
from tests.factories import MailAccountFactory
from tests.mcp.accounts_lock import accounts_table_locked, wait_until_a_call_waits_on_accounts
from tests.mcp.conftest import call_tool, error_code, error_text, payload
from tests.mcp.servers import Server
from tests.support import wait_for

WAITS = "mcp: call waits for a slot"


@pytest.fixture(scope="module")
def queued_server(module_server_factory) -> Server:
    """One slot, one place in the queue, and a wait far longer than any test takes."""
    return module_server_factory(
        MAILFATHOM_MCP_AUTH="none",
        MAILFATHOM_MCP_MAX_CONCURRENT_CALLS="1",
        MAILFATHOM_MCP_MAX_WAITING_CALLS="1",
        MAILFATHOM_MCP_SLOT_WAIT_SECONDS="60",
        MAILFATHOM_LOG_LEVEL="DEBUG",
    )


class InBackground:
    """A list_accounts call made on a thread of its own; `result` once it has returned."""

    def __init__(self, server: Server) -> None:
        self.result: Any = None
        self.returned = threading.Event()
        self.thread = threading.Thread(target=self._call, args=(server,))
        self.thread.start()

    def _call(self, server: Server) -> None:
        try:
            self.result = call_tool(server, None, "list_accounts")
        finally:
            self.returned.set()

    def join(self) -> Any:
        self.thread.join(60)
        assert self.returned.is_set(), "the call never returned"
        return self.result


def _accounts(result) -> list[str]:
    return [account["accountId"] for account in payload(result)["accounts"]]


def _hold_the_only_slot(server: Server, cursor) -> InBackground:
    """Start a call that takes the only slot and blocks on the locked accounts table."""
    holder = InBackground(server)
    wait_until_a_call_waits_on_accounts(cursor)
    return holder


def _queue_one(server: Server) -> InBackground:
    """Start a call and return once the server logged it waiting for the slot."""
    before = server.log().count(WAITS)
    waiter = InBackground(server)
    wait_for(
        lambda: server.log().count(WAITS) > before,
        20,
        interval=0.05,
        message=lambda: "the second call never started waiting for the slot",
    )
    return waiter


@pytest.mark.django_db(transaction=True)
def test_a_call_finding_the_slot_busy_waits_for_it_and_is_served_when_it_is_free(queued_server):
    MailAccountFactory(account_id="billing")
    with accounts_table_locked() as cursor:
        holder = _hold_the_only_slot(queued_server, cursor)
        waiter = _queue_one(queued_server)
        assert not waiter.returned.is_set()  # it waits: it was not refused
    # The lock is gone: the holder finishes, gives the slot to the waiter, and both are served.
    assert _accounts(holder.join()) == ["billing"]
    assert _accounts(waiter.join()) == ["billing"]
    assert f"code={SERVER_BUSY}" not in queued_server.log()


@pytest.mark.django_db(transaction=True)
def test_a_call_past_the_queue_bound_is_refused_at_once_with_54002(queued_server):
    MailAccountFactory(account_id="billing")
    with accounts_table_locked() as cursor:
        holder = _hold_the_only_slot(queued_server, cursor)
        waiter = _queue_one(queued_server)
        # The one place in the queue is taken: the next call is answered while the lock
        # (and so the slot, and the waiter) is still held.
        refused = call_tool(queued_server, None, "list_accounts")
        assert not waiter.returned.is_set()
    assert error_code(refused) == SERVER_BUSY
    assert error_text(refused) == f"MailFathom error {SERVER_BUSY}: {QUEUE_FULL_MESSAGE}"
    assert _accounts(holder.join()) == ["billing"]
    assert _accounts(waiter.join()) == ["billing"]
    assert f"outcome=refused code={SERVER_BUSY}" in queued_server.log()


# --- the queue itself, on a runner in this process ---------------------------------------------


async def _until(condition) -> None:
    with anyio.fail_after(10):
        while not condition():
            await anyio.sleep(0.001)


def _run(main, runner: UseCaseRunner, release: threading.Event) -> Any:
    try:
        return anyio.run(main)
    finally:
        release.set()
        runner.shutdown()


def test_waiting_calls_get_the_slot_in_the_order_they_came():
    runner = UseCaseRunner(1, wait_seconds=60, max_waiting=8)
    release = threading.Event()
    served: list[str] = []

    async def main() -> list[str]:
        async with anyio.create_task_group() as group:
            group.start_soon(runner.call, release.wait)
            await _until(lambda: runner.slots.free == 0)
            for number, name in enumerate("abcd", start=1):
                group.start_soon(runner.call, served.append, name)
                await _until(lambda n=number: runner.slots.waiting == n)
            release.set()
        return served

    assert _run(main, runner, release) == ["a", "b", "c", "d"]


def test_a_waiting_call_that_is_cancelled_gives_up_its_place_in_the_queue():
    runner = UseCaseRunner(1, wait_seconds=60, max_waiting=1)
    release = threading.Event()

    async def main() -> str:
        async with anyio.create_task_group() as group:
            group.start_soon(runner.call, release.wait)
            gone = anyio.CancelScope()  # a client that goes away while it waits
            group.start_soon(_wait_in, gone, runner)
            await _until(lambda: runner.slots.waiting == 1)
            gone.cancel()
            await _until(lambda: runner.slots.waiting == 0)
            # Its place is free again: the next call waits (not refused) and is served.
            answer: list[str] = []

            async def next_call() -> None:
                answer.append(await runner.call(lambda: "served"))

            group.start_soon(next_call)
            await _until(lambda: runner.slots.waiting == 1)
            release.set()
        return answer[0]

    assert _run(main, runner, release) == "served"


async def _wait_in(scope: anyio.CancelScope, runner: UseCaseRunner) -> None:
    with scope:
        await runner.call(lambda: "never run")


def test_a_call_still_waiting_at_the_bound_is_refused_with_54002_saying_how_long_it_waited():
    slots = CallSlots(1, wait_seconds=0.05, max_waiting=1)

    async def main() -> MailFathomError:
        await slots.acquire()
        with pytest.raises(MailFathomError) as refused:
            await slots.acquire()
        assert slots.waiting == 0
        slots.release()
        await slots.acquire()  # the slot given back is free to take again
        return refused.value

    refused = anyio.run(main)
    assert refused.code == SERVER_BUSY
    assert str(refused) == f"MailFathom error {SERVER_BUSY}: {waited_message(0.05)}"
    assert "stayed in use for 0.05 s" in str(refused)


def test_a_slot_handed_to_a_waiter_that_just_gave_up_goes_to_the_next_one():
    slots = CallSlots(1, wait_seconds=60, max_waiting=2)

    async def main() -> None:
        await slots.acquire()
        async with anyio.create_task_group() as group:
            gone = anyio.CancelScope()
            group.start_soon(_acquire_in, gone, slots)
            await _until(lambda: slots.waiting == 1)
            served = anyio.Event()

            async def second() -> None:
                await slots.acquire()
                served.set()

            group.start_soon(second)
            await _until(lambda: slots.waiting == 2)
            # The slot is handed to the first waiter, which gives up before it runs.
            slots.release()
            gone.cancel()
            with anyio.fail_after(10):
                await served.wait()

    anyio.run(main)


async def _acquire_in(scope: anyio.CancelScope, slots: CallSlots) -> None:
    with scope:
        await slots.acquire()

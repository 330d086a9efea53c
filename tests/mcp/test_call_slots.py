"""Slots with no wait: a call past MAILFATHOM_MCP_MAX_CONCURRENT_CALLS is refused at once with 54002.

Listing and the handshake take no slot, so they keep answering while every slot is busy.
The server runs posture none here, so no key check shares the pool with the calls and
what is measured is the slots alone.
"""

from __future__ import annotations

import threading
import time

import anyio
import pytest

from mailfathom.core.errors import MailFathomError
from mailfathom.mcp.execution import SERVER_BUSY, SERVER_BUSY_MESSAGE, UseCaseRunner
from tests.factories import MailAccountFactory
from tests.mcp.accounts_lock import accounts_table_locked, wait_until_a_call_waits_on_accounts
from tests.mcp.conftest import call_tool, error_code, error_text, list_tools, payload


@pytest.mark.django_db(transaction=True)
def test_a_call_past_the_slots_is_refused_at_once_with_54002_while_listing_still_answers(
    module_server_factory,
):
    server = module_server_factory(
        MAILFATHOM_MCP_AUTH="none",
        MAILFATHOM_MCP_MAX_CONCURRENT_CALLS="1",
        MAILFATHOM_MCP_SLOT_WAIT_SECONDS="0",
        MAILFATHOM_MCP_REQUEST_TIMEOUT="10",
    )
    MailAccountFactory(account_id="billing")
    held: dict[str, object] = {}

    def hold_the_only_slot() -> None:
        held["result"] = call_tool(server, None, "list_accounts")

    # The accounts table is locked, so the first call sits in the only slot until it is free.
    with accounts_table_locked() as cursor:
        holder = threading.Thread(target=hold_the_only_slot)
        holder.start()
        wait_until_a_call_waits_on_accounts(cursor)
        started = time.monotonic()
        refused = call_tool(server, None, "list_accounts")
        listed = list_tools(server, None)  # a fresh client: initialize, then tools/list
        elapsed = time.monotonic() - started

    holder.join(30)
    assert error_code(refused) == SERVER_BUSY
    assert error_text(refused) == f"MailFathom error {SERVER_BUSY}: {SERVER_BUSY_MESSAGE}"
    assert "list_accounts" in [tool["name"] for tool in listed]
    assert elapsed < 5, "the refusal and the listing waited for the slot"
    # The held call finished once the table was free, and gave its slot back.
    again = call_tool(server, None, "list_accounts")
    for result in (held["result"], again):
        assert [a["accountId"] for a in payload(result)["accounts"]] == ["billing"]
    assert f"outcome=refused code={SERVER_BUSY}" in server.log()


def test_a_slot_is_held_until_the_use_case_returns_even_after_its_caller_gave_up():
    runner = UseCaseRunner(1)
    release = threading.Event()

    async def abandon_one_then_call_again() -> None:
        with anyio.move_on_after(0.2):
            await runner.call(release.wait)
        with pytest.raises(MailFathomError) as busy:
            await runner.call(lambda: "second")
        assert busy.value.code == SERVER_BUSY
        release.set()
        with anyio.fail_after(5):
            while True:
                try:
                    assert await runner.call(lambda: "third") == "third"
                    return
                except MailFathomError:
                    await anyio.sleep(0.01)

    try:
        anyio.run(abandon_one_then_call_again)
    finally:
        release.set()
        runner.shutdown()


def test_side_reads_are_not_refused_while_every_slot_is_busy():
    runner = UseCaseRunner(1)
    release = threading.Event()

    async def main() -> str:
        async with anyio.create_task_group() as group:
            group.start_soon(runner.call, release.wait)
            await anyio.sleep(0.1)
            with anyio.fail_after(2):
                answer = await runner.read(lambda: "listed")
            release.set()
        return answer

    try:
        assert anyio.run(main) == "listed"
    finally:
        release.set()
        runner.shutdown()

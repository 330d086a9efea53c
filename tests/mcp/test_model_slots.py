"""Model slots: ask_mail and draft_reply run on slots of their own, apart from the quick tools.

A question holds its slot for seconds while its models answer; on the quick tools' few
slots (one per CPU by default) two questions would stall every listing and search. These
run the bridge in process with stand-in tools, one slot of each kind and no wait, so a
call that would take the other kind's slot is refused at once with 54002 and nothing here
depends on how long anything takes.
"""

from __future__ import annotations

import os
import threading

import anyio
import pytest
from mcp import Client

from mailfathom.core.wire import WireModel
from mailfathom.mcp.execution import (
    MOST_QUICK_SLOTS_BY_DEFAULT,
    SERVER_BUSY,
    UseCaseRunner,
    quick_slot_count,
)
from mailfathom.mcp.server import build_server
from mailfathom.mcp.tools import TOOLS, ToolSpec
from tests.mcp.conftest import error_code, sole_error


class Echo(WireModel):
    value: str


def _tool(name: str, release: threading.Event, started: threading.Event, *, model_bound: bool) -> ToolSpec:
    def use_case() -> Echo:
        started.set()
        release.wait(30)
        return Echo(value=name)

    return ToolSpec(
        name=name,
        title=name,
        description="A stand-in tool.",
        arguments=(),
        result_model=Echo,
        use_case=use_case,
        model_bound=model_bound,
    )


class Stand:
    """A quick stand-in and a model-bound one, each blocking until its event is set."""

    def __init__(self) -> None:
        self.release_quick, self.release_model = threading.Event(), threading.Event()
        self.quick_started, self.model_started = threading.Event(), threading.Event()
        self.tools = (
            _tool("stand_in_quick", self.release_quick, self.quick_started, model_bound=False),
            _tool("stand_in_model", self.release_model, self.model_started, model_bound=True),
        )
        self.quick, self.model = UseCaseRunner(1), UseCaseRunner(1, name="mcp-model-call")

    def run(self, action):
        server = build_server(self.quick, tools=self.tools, model_runner=self.model)

        async def main():
            async with Client(server, mode="legacy") as client:
                return await action(client)

        try:
            return anyio.run(main)
        except BaseExceptionGroup as group:
            raise sole_error(group) from None
        finally:
            self.release_quick.set()
            self.release_model.set()
            self.quick.shutdown()
            self.model.shutdown()


async def _hold(client, name: str, started: threading.Event, group) -> dict:
    """Start a call of `name` in `group` and return once its use case runs (it holds a slot)."""
    held: dict = {}

    async def call() -> None:
        held["result"] = await client.call_tool(name, {})

    group.start_soon(call)
    with anyio.fail_after(10):
        while not started.is_set():
            await anyio.sleep(0.01)
    return held


def test_a_question_holding_its_slot_leaves_the_quick_slot_free():
    stand = Stand()

    async def action(client):
        async with anyio.create_task_group() as group:
            held = await _hold(client, "stand_in_model", stand.model_started, group)
            second_question = await client.call_tool("stand_in_model", {})
            stand.release_quick.set()
            quick = await client.call_tool("stand_in_quick", {})
            stand.release_model.set()
        return held["result"], second_question, quick

    held, second_question, quick = stand.run(action)
    assert error_code(second_question) == SERVER_BUSY  # the only model slot was taken
    assert quick.structured_content == {"value": "stand_in_quick"}
    assert held.structured_content == {"value": "stand_in_model"}


def test_a_quick_call_holding_its_slot_leaves_the_model_slot_free():
    stand = Stand()

    async def action(client):
        async with anyio.create_task_group() as group:
            held = await _hold(client, "stand_in_quick", stand.quick_started, group)
            second_quick = await client.call_tool("stand_in_quick", {})
            stand.release_model.set()
            question = await client.call_tool("stand_in_model", {})
            stand.release_quick.set()
        return held["result"], second_quick, question

    held, second_quick, question = stand.run(action)
    assert error_code(second_quick) == SERVER_BUSY  # the only quick slot was taken
    assert question.structured_content == {"value": "stand_in_model"}
    assert held.structured_content == {"value": "stand_in_quick"}


def test_the_tools_that_wait_on_models_are_ask_mail_and_draft_reply():
    assert {tool.name for tool in TOOLS if tool.model_bound} == {"ask_mail", "draft_reply"}


@pytest.mark.parametrize("configured", [1, 3, 256])
def test_a_configured_number_of_quick_slots_is_taken_as_it_stands(configured):
    assert quick_slot_count(configured) == configured


def test_zero_quick_slots_means_one_per_cpu_the_process_may_run_on():
    assert quick_slot_count(0) == min(len(os.sched_getaffinity(0)), MOST_QUICK_SLOTS_BY_DEFAULT)


def test_the_default_gives_at_most_eight_quick_slots_however_many_cpus_are_seen(monkeypatch):
    # A container held to two CPUs by a quota still sees every core of its host.
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(64)))
    assert quick_slot_count(0) == MOST_QUICK_SLOTS_BY_DEFAULT == 8
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0})
    assert quick_slot_count(0) == 1

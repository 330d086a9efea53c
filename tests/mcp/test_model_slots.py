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

from mailfathom.core.config import MOST_QUICK_SLOTS_BY_DEFAULT
from mailfathom.mcp import http
from mailfathom.mcp.execution import SERVER_BUSY, UseCaseRunner, quick_slot_count
from mailfathom.mcp.server import build_server
from mailfathom.mcp.tools import TOOLS, ToolSpec
from tests.configure import configure
from tests.mcp.conftest import error_code
from tests.mcp.stand_ins import Echo, in_process, stand_in_tool

QUICK, MODEL = "stand_in_quick", "stand_in_model"


class Stand:
    """A quick stand-in tool and a model-bound one, each blocking until its event is set."""

    def __init__(self) -> None:
        self.release = {QUICK: threading.Event(), MODEL: threading.Event()}
        self.started = {QUICK: threading.Event(), MODEL: threading.Event()}
        self.tools = tuple(self._tool(name, model_bound=name == MODEL) for name in (QUICK, MODEL))
        self.quick, self.model = UseCaseRunner(1), UseCaseRunner(1, name="mcp-model-call")

    def _tool(self, name: str, *, model_bound: bool) -> ToolSpec:
        def use_case() -> Echo:
            self.started[name].set()
            self.release[name].wait(30)
            return Echo(value=name)

        return stand_in_tool(name, use_case, model_bound=model_bound)

    def run(self, action):
        try:
            return in_process(build_server(self.quick, tools=self.tools, model_runner=self.model), action)
        finally:
            for event in self.release.values():
                event.set()
            self.quick.shutdown()
            self.model.shutdown()


@pytest.mark.parametrize(("holder", "other"), [(MODEL, QUICK), (QUICK, MODEL)])
def test_a_call_holding_its_kinds_only_slot_leaves_the_other_kinds_slot_free(holder, other):
    stand = Stand()

    async def action(client):
        held: dict = {}

        async def hold() -> None:
            held["result"] = await client.call_tool(holder, {})

        async with anyio.create_task_group() as group:
            group.start_soon(hold)
            with anyio.fail_after(10):
                while not stand.started[holder].is_set():  # the held call is in its slot
                    await anyio.sleep(0.01)
            same_kind = await client.call_tool(holder, {})
            stand.release[other].set()
            other_kind = await client.call_tool(other, {})
            stand.release[holder].set()
        return held["result"], same_kind, other_kind

    held, same_kind, other_kind = stand.run(action)
    assert error_code(same_kind) == SERVER_BUSY  # the only slot of its kind was taken
    assert other_kind.structured_content == {"value": other}
    assert held.structured_content == {"value": holder}


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


@pytest.mark.parametrize(("quick", "model"), [(0, 4), (3, 1)])
def test_the_served_app_sizes_and_bounds_each_kind_of_slot_from_its_settings(
    settings, monkeypatch, quick, model
):
    built: dict = {}

    def capture(runner, tools=TOOLS, model_runner=None):
        built["quick"], built["model"] = runner, model_runner
        return build_server(runner, tools, model_runner)

    monkeypatch.setattr(http, "build_server", capture)
    configure(
        settings,
        mcp_max_concurrent_calls=quick,
        mcp_max_concurrent_model_calls=model,
        mcp_slot_wait_seconds=2.5,
        mcp_max_waiting_calls=7,
        mcp_auth="none",
    )
    http.build_mcp_app()
    assert built["quick"].max_workers == quick_slot_count(quick)
    assert built["model"].max_workers == model
    assert built["quick"] is not built["model"]
    # Each kind waits as long, and queues as many, as the settings say (a queue each).
    for runner in (built["quick"], built["model"]):
        assert (runner.slots.wait_seconds, runner.slots.max_waiting) == (2.5, 7)

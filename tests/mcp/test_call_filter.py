"""The call filter: what one call records, logs and measures, and how failures are published.

Most of these run the bridge in process (the SDK's in-memory client against the same
server object uvicorn serves) with stand-in tools, so a failure can be provoked at will;
unknown tool names go through /mcp for real in test_unknown_tool.py.
"""

from __future__ import annotations

import json
import logging
import re
import time

import anyio
import pytest
from mcp.shared.exceptions import MCPError

from mailfathom.core.errors import MailFathomError
from mailfathom.mcp import calls
from mailfathom.mcp.execution import UseCaseRunner
from mailfathom.mcp.server import build_server
from tests.mcp.conftest import error_code, error_text, post
from tests.mcp.stand_ins import Echo, in_process, stand_in_tool
from tests.support import wait_for

HOSTILE = "list_emails\n2031-01-01 INFO forged log line <script>alert(1)</script>"


def _ok() -> Echo:
    return Echo(value="fine")


def _refuses() -> Echo:
    raise MailFathomError(51002, "The stand-in argument must be something else.")


def _internal() -> Echo:
    raise MailFathomError(81001, "A stored credential opens with no key of the ring (internal).")


def _crashes() -> Echo:
    raise KeyError("mail-content-in-an-exception")


def _slow() -> Echo:
    time.sleep(1.5)
    return Echo(value="late")


TOOLS = (
    stand_in_tool("stand_in_ok", _ok),
    stand_in_tool("stand_in_refuses", _refuses),
    stand_in_tool("stand_in_internal", _internal),
    stand_in_tool("stand_in_crashes", _crashes),
    stand_in_tool("stand_in_slow", _slow),
)


def _in_process(action, tools=TOOLS):
    return in_process(build_server(UseCaseRunner(4), tools=tools), action)


def _call(name: str):
    async def action(client):
        return await client.call_tool(name, {})

    return _in_process(action)


def _call_lines(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "mailfathom.mcp.calls"]


@pytest.fixture(autouse=True)
def _info_logs(caplog):
    caplog.set_level(logging.INFO, logger="mailfathom.mcp")


# --- outcomes and what the caller reads -----------------------------------------------------


def test_a_successful_call_is_recorded_ok(caplog):
    result = _call("stand_in_ok")
    assert result.structured_content == {"value": "fine"}
    [line] = _call_lines(caplog)
    assert re.fullmatch(
        r"mcp call tool=stand_in_ok outcome=ok code=- duration_ms=\d+\.\d trace=[0-9a-f]{32}", line
    )


def test_a_caller_category_failure_is_published_as_it_stands(caplog):
    result = _call("stand_in_refuses")
    assert error_text(result) == "MailFathom error 51002: The stand-in argument must be something else."
    assert "outcome=refused code=51002" in _call_lines(caplog)[0]


def test_an_internal_category_failure_becomes_54001_with_the_detail_in_the_log(caplog):
    result = _call("stand_in_internal")
    assert error_text(result) == (
        "MailFathom error 54001: The request failed for a reason this server does not describe."
    )
    assert "outcome=failed code=54001" in _call_lines(caplog)[0]
    assert any(
        "81001" in (r.exc_text or "") or r.exc_info for r in caplog.records if r.levelno >= logging.ERROR
    )


def test_an_undiagnosed_exception_becomes_54001_and_is_logged_in_full_under_the_trace_id(caplog):
    result = _call("stand_in_crashes")

    assert error_code(result) == 54001
    assert "KeyError" not in str(result.content) and "mail-content" not in str(result.content)
    [failure] = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert failure.exc_info is not None and failure.exc_info[0] is KeyError
    trace = re.search(r"trace=([0-9a-f]{32})", failure.getMessage()).group(1)
    assert "outcome=failed code=54001" in _call_lines(caplog)[0]
    assert _call_lines(caplog)[0].endswith(f"trace={trace}")


def test_a_cancelled_call_is_recorded_and_not_converted(caplog):
    async def action(client):
        with anyio.move_on_after(0.3):
            await client.call_tool("stand_in_slow", {})
            return "answered"
        return "cancelled"

    assert _in_process(action) == "cancelled"
    wait_for(lambda: _call_lines(caplog), 5, interval=0.05, message=lambda: "no call line was logged")
    assert "tool=stand_in_slow outcome=cancelled code=-" in _call_lines(caplog)[0]


@pytest.mark.django_db(transaction=True)
def test_a_malformed_call_is_a_protocol_error_recorded_and_re_raised(mcp_server, api_key):
    body = json.dumps({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"arguments": {}}})
    headers = {"Authorization": f"Bearer {api_key}", "MCP-Protocol-Version": "2025-06-18"}

    status, answer, _ = post(mcp_server, body.encode(), headers)

    assert status == 200
    assert json.loads(answer)["error"]["code"] == -32602  # a JSON-RPC error, not a tool result
    assert f"mcp call tool={calls.PLACEHOLDER} outcome=protocol_error code=-32602" in mcp_server.log()


# --- names: the log and the instruments never take caller text ------------------------------


@pytest.mark.parametrize(
    ("name", "recorded"),
    [
        ("stand_in_ok", "stand_in_ok"),
        ("list_emails", calls.PLACEHOLDER),  # spelled like ours, but this server does not publish it
        ("Stand_In_Ok", calls.PLACEHOLDER),
        (HOSTILE, calls.PLACEHOLDER),
        (None, calls.PLACEHOLDER),
    ],
)
def test_only_published_names_are_recorded(name, recorded):
    assert calls.recorded_name(name, frozenset(t.name for t in TOOLS)) == recorded


def test_instruments_count_calls_by_published_tool_outcome_and_code(metric_reader):
    reader = metric_reader
    for name in ("stand_in_ok", "stand_in_refuses"):
        _call(name)
    for name in ("not_published", HOSTILE):
        with pytest.raises(MCPError):
            _call(name)

    points = {}
    for resource in reader.get_metrics_data().resource_metrics:
        for scope in resource.scope_metrics:
            for metric in scope.metrics:
                if not metric.name.startswith("mailfathom.mcp."):
                    continue  # the session's reader also holds other instruments
                for point in metric.data.data_points:
                    key = (metric.name, point.attributes["mcp.tool"], point.attributes["mcp.outcome"])
                    points[key] = point
    calls_by = {key[1:]: p.value for key, p in points.items() if key[0] == "mailfathom.mcp.tool.calls"}
    assert calls_by[("stand_in_ok", "ok")] >= 1
    assert calls_by[("stand_in_refuses", "refused")] >= 1
    assert calls_by[(calls.PLACEHOLDER, "refused")] >= 2  # both unpublished names, one series
    # The session's reader also counts other tests' calls of the real tools: what matters is
    # that neither unpublished name became a series of its own.
    recorded_tools = {tool for tool, _ in calls_by}
    assert not recorded_tools & {"not_published", HOSTILE}
    durations = [key for key in points if key[0] == "mailfathom.mcp.tool.duration"]
    assert ("mailfathom.mcp.tool.duration", "stand_in_ok", "ok") in durations


# --- ask_mail's advertisement seam ----------------------------------------------------------


def test_a_tool_with_an_advertisement_rule_is_listed_only_while_it_reads_true():
    state = {"available": False}
    tools = (*TOOLS[:1], stand_in_tool("ask_stand_in", _ok, advertised=lambda: state["available"]))

    async def names(client):
        return [tool.name for tool in (await client.list_tools()).tools]

    async def call(client):
        return await client.call_tool("ask_stand_in", {})

    assert _in_process(names, tools) == ["stand_in_ok"]
    # Listing is not authorization: a call that arrives anyway reaches its use case.
    assert _in_process(call, tools).structured_content == {"value": "fine"}
    state["available"] = True
    assert _in_process(names, tools) == ["stand_in_ok", "ask_stand_in"]


def test_ask_mail_is_not_advertised_while_nothing_can_answer():
    from mailfathom.mcp.answering import answering_available

    assert answering_available() is False

"""The pieces around the SDK app: the concurrency bound, the loopback gate, GET, the lifespan."""

from __future__ import annotations

import threading
import time

import anyio
import pytest

from mailfathom.mcp.execution import UseCaseRunner
from mailfathom.mcp.http import Deadline, LoopbackGate, NoEventStream
from tests.mcp.conftest import post


def test_no_more_use_cases_run_at_once_than_the_limit():
    runner = UseCaseRunner(2)
    lock = threading.Lock()
    state = {"running": 0, "most": 0}

    def work() -> None:
        with lock:
            state["running"] += 1
            state["most"] = max(state["most"], state["running"])
        time.sleep(0.2)
        with lock:
            state["running"] -= 1

    async def main() -> None:
        async with anyio.create_task_group() as group:
            for _ in range(6):
                group.start_soon(runner.run, work)

    started = time.monotonic()
    anyio.run(main)
    assert state["most"] == 2
    assert time.monotonic() - started >= 0.6  # six calls, two at a time
    runner.shutdown()


async def _inner(scope, receive, send):
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": b"served"})


def _serve(app, scope) -> list[dict]:
    sent: list[dict] = []

    async def receive():
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message):
        sent.append(message)

    anyio.run(app, scope, receive, send)
    return sent


def _http(method: str = "POST", server: tuple[str, int] = ("127.0.0.1", 8000)) -> dict:
    return {"type": "http", "method": method, "path": "/mcp", "headers": [], "server": server}


@pytest.mark.parametrize("address", ["127.0.0.1", "::1", "127.0.0.53"])
def test_posture_none_serves_requests_that_arrived_on_loopback(address):
    assert _serve(LoopbackGate(_inner), _http(server=(address, 8000)))[0]["status"] == 200


@pytest.mark.parametrize("server", [("192.0.2.10", 8000), ("10.1.2.3", 443), None])
def test_posture_none_refuses_requests_that_arrived_elsewhere(server):
    assert _serve(LoopbackGate(_inner), _http(server=server))[0]["status"] == 403


def test_get_is_405_because_a_stateless_server_has_no_event_stream():
    [start, _] = _serve(NoEventStream(_inner), _http("GET"))
    assert start["status"] == 405
    assert (b"allow", b"POST") in start["headers"]


def test_a_request_past_the_deadline_is_504_and_one_in_time_is_untouched():
    async def slow(scope, receive, send):
        await anyio.sleep(5)

    assert _serve(Deadline(slow, 0.1), _http())[0]["status"] == 504
    assert _serve(Deadline(_inner, 1), _http())[1]["body"] == b"served"


def test_the_lifespan_passes_through_every_wrapper():
    seen = []

    async def app(scope, receive, send):
        seen.append(scope["type"])

    wrapped = Deadline(NoEventStream(LoopbackGate(app)), 1)
    anyio.run(wrapped, {"type": "lifespan"}, None, None)
    assert seen == ["lifespan"]


@pytest.mark.django_db(transaction=True)
def test_the_server_answers_get_with_405(mcp_server, api_key):
    import urllib.error
    import urllib.request

    request = urllib.request.Request(  # noqa: S310 - the test's own server
        mcp_server.url, headers={"Authorization": f"Bearer {api_key}"}
    )
    with pytest.raises(urllib.error.HTTPError) as answer:
        urllib.request.urlopen(request, timeout=10)  # noqa: S310 - the test's own server
    assert answer.value.code == 405
    # POST is what it serves (here a JSON-RPC envelope the SDK refuses as malformed).
    assert post(mcp_server, b"{}", {"Authorization": f"Bearer {api_key}"})[0] == 400

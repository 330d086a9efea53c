"""What a run publishes: a span inside the MCP call's span, counts only, never content."""

from __future__ import annotations

import anyio
import pytest
from mcp import Client
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from mailbox.models import Email
from mailfathom.mcp.execution import UseCaseRunner
from mailfathom.mcp.server import build_server
from tests.conftest import metric_points

pytestmark = pytest.mark.django_db(transaction=True)

QUESTION = "What did the insurer finally agree to pay?"


@pytest.fixture(scope="module")
def spans() -> InMemorySpanExporter:
    provider = trace.get_tracer_provider()
    if not isinstance(provider, TracerProvider):
        provider = TracerProvider()
        trace.set_tracer_provider(provider)
    exporter = InMemorySpanExporter()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return exporter


@pytest.mark.parametrize("chat_api", ["chat-completions"], indirect=True)
def test_a_run_is_a_span_inside_the_call_span_with_counts_and_no_content(world, obedient, chat_api, spans):
    world()
    spans.clear()
    server = build_server(UseCaseRunner(2))

    async def ask():
        async with Client(server, mode="legacy") as client:
            return await client.call_tool("ask_mail", {"question": QUESTION, "accounts": ["work"]})

    result = anyio.run(ask)

    assert not result.is_error, result
    finished = spans.get_finished_spans()
    (run,) = [span for span in finished if span.name == "answer_mail_question"]
    (call,) = [span for span in finished if span.name == "tools/call ask_mail"]
    assert run.parent is not None and run.parent.span_id == call.context.span_id
    attributes = dict(run.attributes)
    assert attributes["mailfathom.answering.endpoint"] == "scripted"
    assert attributes["mailfathom.answering.outcome"] == "answered"
    assert attributes["mailfathom.answering.provider_calls"] == 2
    assert attributes["mailfathom.answering.lookups"] == 1
    assert attributes["mailfathom.answering.passages"] >= 1
    assert attributes["mailfathom.answering.emails"] >= 1
    assert attributes["mailfathom.answering.retrieval_truncated"] is False
    private = [QUESTION, "insurer payment", *Email.objects.values_list("subject", flat=True)]
    for value in attributes.values():
        for text in private:
            assert text not in str(value)


def _total(reader, name: str) -> float:
    return sum(value for metric, _attributes, value in metric_points(reader) if metric == name)


@pytest.mark.parametrize("chat_api", ["chat-completions"], indirect=True)
def test_spend_is_published_as_runs_and_tokens(world, obedient, chat_api, metric_reader):
    from answering.services.question import ask_mail

    world()
    runs, tokens = (
        _total(metric_reader, "mailfathom.answering.runs"),
        _total(metric_reader, "mailfathom.answering.tokens"),
    )

    ask_mail(QUESTION, accounts=["work"])

    assert _total(metric_reader, "mailfathom.answering.runs") == runs + 1
    assert _total(metric_reader, "mailfathom.answering.tokens") == tokens + 240  # two calls of 100 + 20
    for name, attributes, _value in metric_points(metric_reader):
        if name.startswith("mailfathom.answering."):
            assert attributes == {}  # counts only: no dimension a caller or a message could choose

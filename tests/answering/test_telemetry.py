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

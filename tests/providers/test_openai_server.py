"""The scripted server speaks the wire format the real SDK reads, for chat as for embeddings."""

from __future__ import annotations

import json
import time

import openai
import pytest

from tests.providers.openai_server import (
    empty,
    malformed,
    respond,
    status,
    text,
    tool_calls,
    tool_results,
    trickle,
    truncated_tool_call,
    vector_for,
)


@pytest.fixture
def client(openai_server):
    return openai.OpenAI(base_url=openai_server.base_url, api_key="k", max_retries=0)


def test_chat_answers_in_script_order_then_by_default(client, openai_server):
    openai_server.chat.script(
        tool_calls(("search_mail", {"query": "invoice"})),
        text("The invoice is due Friday."),
        status(401),
    )
    messages = [{"role": "user", "content": "When is the invoice due?"}]
    first = client.chat.completions.create(model="scripted", messages=messages)
    call = first.choices[0].message.tool_calls[0]
    assert (call.function.name, json.loads(call.function.arguments)) == ("search_mail", {"query": "invoice"})
    assert first.choices[0].finish_reason == "tool_calls"
    second = client.chat.completions.create(model="scripted", messages=messages)
    assert second.choices[0].message.content == "The invoice is due Friday."
    with pytest.raises(openai.AuthenticationError):
        client.chat.completions.create(model="scripted", messages=messages)
    default = client.chat.completions.create(model="scripted", messages=messages)
    assert default.choices[0].message.content == "Scripted answer."
    assert openai_server.count("chat/completions") == 4
    assert openai_server.requests[0].messages == messages


def test_embeddings_in_base64_as_the_sdk_asks_by_default(client, openai_server):
    response = client.embeddings.create(model="m", input=["a", "b"])  # SDK default: base64
    assert [len(item.embedding) for item in response.data] == [openai_server.dimensions] * 2
    assert response.data[1].embedding == pytest.approx(vector_for("b", openai_server.dimensions), abs=1e-6)
    assert openai_server.requests[0].body["encoding_format"] == "base64"


def test_responses_endpoint_speaks_the_responses_wire_format(client, openai_server):
    openai_server.responses.script(
        tool_calls(("search_mail", {"query": "invoice"}), content="Looking.", usage=(7, 3)),
        text("Friday.", usage=None),
    )
    first = client.responses.create(model="scripted", instructions="Be brief.", input="When?")
    message, call = first.output
    assert (message.type, message.content[0].text) == ("message", "Looking.")
    assert (call.type, call.call_id, call.name, json.loads(call.arguments)) == (
        "function_call",
        "call_0",
        "search_mail",
        {"query": "invoice"},
    )
    assert (first.usage.input_tokens, first.usage.output_tokens) == (7, 3)
    second = client.responses.create(model="scripted", input=[{"role": "user", "content": "When?"}])
    assert second.output_text == "Friday." and second.usage is None
    recorded = openai_server.recorded("responses")
    assert recorded[0].instructions == "Be brief." and recorded[0].input_items == [
        {"role": "user", "content": "When?"}
    ]
    assert recorded[1].body == {"model": "scripted", "input": [{"role": "user", "content": "When?"}]}
    assert openai_server.count("chat/completions") == 0


def test_respond_decides_per_request_and_always_sets_the_default(client, openai_server):
    openai_server.chat.script(respond(lambda request: text(f"{len(request['messages'])} messages")))
    openai_server.chat.always(lambda request: text("tool said: " + ",".join(tool_results(request))))
    messages = [{"role": "user", "content": "q"}]
    first = client.chat.completions.create(model="m", messages=messages)
    assert first.choices[0].message.content == "1 messages"
    turns = [
        *messages,
        {
            "role": "assistant",
            "tool_calls": [{"id": "c", "type": "function", "function": {"name": "f", "arguments": "{}"}}],
        },
        {"role": "tool", "tool_call_id": "c", "content": "42"},
    ]
    second = client.chat.completions.create(model="m", messages=turns)
    assert second.choices[0].message.content == "tool said: 42"
    first_at, second_at = (request.at for request in openai_server.recorded("chat/completions"))
    assert 0 < first_at <= second_at


def test_faults_malformed_empty_truncated_and_trickle(client, openai_server):
    messages = [{"role": "user", "content": "q"}]
    openai_server.chat.script(malformed(), empty(), truncated_tool_call("f"), trickle(text("slow"), 0.05, 4))
    with pytest.raises(json.JSONDecodeError):
        client.chat.completions.create(model="m", messages=messages)
    blank = client.chat.completions.create(model="m", messages=messages).choices[0]
    assert blank.message.content is None and blank.message.tool_calls is None
    cut = client.chat.completions.create(model="m", messages=messages).choices[0]
    assert cut.finish_reason == "length"
    with pytest.raises(json.JSONDecodeError):
        json.loads(cut.message.tool_calls[0].function.arguments)
    started = time.monotonic()
    slow = client.chat.completions.create(model="m", messages=messages)
    assert slow.choices[0].message.content == "slow" and time.monotonic() - started >= 0.15

"""The scripted server speaks the wire format the real SDK reads, for chat as for embeddings."""

from __future__ import annotations

import json

import openai
import pytest

from tests.providers.openai_server import status, text, tool_calls, vector_for


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
    assert [len(item.embedding) for item in response.data] == [384, 384]
    assert response.data[1].embedding == pytest.approx(vector_for("b", 384), abs=1e-6)
    assert openai_server.requests[0].body["encoding_format"] == "base64"

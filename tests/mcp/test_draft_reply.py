"""draft_reply through /mcp with the real client, a real uvicorn, and scripted endpoints.

The server process drafts through the chat endpoint declared in its environment (the
drafting roles fall back to it), and embeds with the same scripted endpoint the test
process embedded the mail with. Nothing is stored.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from accounts.services.mcp_keys import create_key
from answering.models import Draft, DraftAttempt
from mailbox.services.embedding import embed_pending
from mailbox.services.lexical_search import refresh_term_stats
from mailfathom.mcp.tools import DRAFT_REPLY
from mailfathom.providers import health
from tests.answering.drafting.support import CLASSIFY, LETTER, DraftingModel, build_shop
from tests.configure import configure, scripted_embeddings
from tests.mcp import test_descriptors as descriptors
from tests.mcp.answering_support import answering_env, embedding_env
from tests.mcp.conftest import call_tool, error_code, list_tools, payload
from tests.providers.openai_server import text

pytestmark = pytest.mark.django_db(transaction=True)

SNAPSHOT = Path(__file__).parent / "snapshots" / "draft_reply.json"


@pytest.fixture(scope="module")
def drafting_server(module_server_factory, scripted):
    return module_server_factory(**answering_env(scripted, alias="scripted-drafting"))


@pytest.fixture(scope="module")
def no_chat_server(module_server_factory, scripted):
    return module_server_factory(**embedding_env(scripted))


@pytest.fixture
def shop(settings, scripted):
    configure(settings, **scripted_embeddings(scripted))
    for role in ("chat", "utility", "drafting", "embedding"):
        health.clear_health(role)
    built = build_shop()
    embed_pending()
    refresh_term_stats()
    model = DraftingModel()
    scripted.chat.always(model)
    yield built, model
    for role in ("chat", "utility", "drafting"):
        health.clear_health(role)


def test_draft_reply_is_listed_and_returns_the_draft_and_its_verdict_without_storing_it(
    drafting_server, api_key, shop
):
    built, _model = shop
    names = [tool["name"] for tool in list_tools(drafting_server, api_key)]
    assert names[-1] == "draft_reply" and "ask_mail" in names

    result = payload(
        call_tool(drafting_server, api_key, "draft_reply", {"storedEmailId": str(built.answered.pk)})
    )

    assert result["drafted"] is True
    assert result["body"] == LETTER.strip()
    assert (result["intent"], result["language"], result["verdict"]) == ("inquiry", "en", "ready")
    assert result["reasons"] == [] and result["refusal"] is None
    assert result["sourceEmailIds"][0] == str(built.source.pk)
    assert result["modelAlias"] == "scripted-drafting"
    assert set(result["tokens"]) == {"classify", "condense", "generate"}
    assert not Draft.objects.exists() and not DraftAttempt.objects.exists()
    log = drafting_server.log()
    assert "ZX-88120" not in log and "Quist" not in log and "warehouse" not in log
    assert "draft composed: endpoint=scripted-drafting" in log


def test_a_refused_classification_is_a_result_saying_where_it_stopped(drafting_server, api_key, shop):
    built, model = shop
    model.script(CLASSIFY, text("I think it is an inquiry."))

    result = payload(
        call_tool(drafting_server, api_key, "draft_reply", {"storedEmailId": str(built.answered.pk)})
    )

    assert result["drafted"] is False and result["body"] is None
    assert (result["refusedAt"], result["refusal"]) == ("classify", "classifyRefused")


def test_the_scope_is_bound_before_anything_is_read(drafting_server, api_key, shop):
    built, model = shop
    elsewhere = create_key("other only", ["other"]).key

    for key, email_id in ((elsewhere, built.answered.pk), (api_key, built.hidden.pk)):
        refused = call_tool(drafting_server, key, "draft_reply", {"storedEmailId": str(email_id)})
        assert error_code(refused) == 53002
    assert error_code(call_tool(drafting_server, api_key, "draft_reply", {"storedEmailId": "nope"})) == 51004
    assert not model.requests, "no model was called for a refused email"


def test_without_a_chat_endpoint_draft_reply_is_not_listed_and_refuses(no_chat_server, api_key, shop):
    built, _model = shop
    assert "draft_reply" not in [tool["name"] for tool in list_tools(no_chat_server, api_key)]
    refused = call_tool(no_chat_server, api_key, "draft_reply", {"storedEmailId": str(built.answered.pk)})
    assert error_code(refused) == 56001


def test_draft_reply_descriptor_matches_its_pinned_snapshot_and_the_conventions():
    descriptor = DRAFT_REPLY.descriptor().model_dump(mode="json", by_alias=True, exclude_none=True)
    text_ = json.dumps(descriptor, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
    if descriptors.UPDATE:
        SNAPSHOT.write_text(text_)
    assert json.loads(text_) == json.loads(SNAPSHOT.read_text())
    descriptors.test_every_input_property_is_top_level_camel_case_and_described([descriptor])
    descriptors.test_every_output_property_is_camel_case_and_described([descriptor])
    assert descriptor["annotations"]["readOnlyHint"] is True
    assert descriptor["inputSchema"]["required"] == ["storedEmailId"]

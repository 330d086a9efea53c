"""Drafting tests: the real `openai` client against the scripted server for every endpoint."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from mailbox.services.embedding import embed_pending
from mailbox.services.lexical_search import refresh_term_stats
from mailfathom.providers import health
from tests.answering.drafting.support import DraftingModel, Shop, build_shop
from tests.configure import configure, scripted_embeddings
from tests.providers.openai_server import ScriptedOpenAIServer
from tests.support import scripted_server  # noqa: F401

ROLES = ("embedding", "chat", "utility", "drafting")


@pytest.fixture(params=["chat-completions"])
def chat_api(request) -> str:
    return request.param


@pytest.fixture
def drafting(settings, scripted, chat_api) -> Iterator[ScriptedOpenAIServer]:
    """Embeddings and chat from `scripted`; the drafting roles fall back to the chat endpoint."""
    settings.PROVIDER_HEALTH_NAMESPACE = f"test-drafting-{uuid.uuid4().hex}"
    configure(
        settings,
        **scripted_embeddings(scripted, embedding_max_retries=0),
        chat_provider="openai",
        chat_alias="scripted",
        chat_base_url=scripted.base_url,
        chat_model="scripted-chat",
        chat_api_key="k",
        chat_api=chat_api,
        chat_timeout_seconds=5,
        chat_max_retries=0,
    )
    yield scripted
    for role in ROLES:
        health.clear_health(role)


@pytest.fixture
def model(drafting, chat_api) -> DraftingModel:
    scripted_model = DraftingModel()
    script = drafting.chat if chat_api == "chat-completions" else drafting.responses
    script.always(scripted_model)
    return scripted_model


@pytest.fixture
def shop(drafting) -> Shop:
    built = build_shop()
    embed_pending()
    refresh_term_stats()
    return built

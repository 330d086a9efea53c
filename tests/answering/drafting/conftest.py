"""Drafting tests: the real `openai` client against the scripted server for every endpoint."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from mailbox.services.embedding import embed_pending
from mailbox.services.lexical_search import refresh_term_stats
from mailfathom.core.config import DRAFTING_ROLES
from mailfathom.providers import health
from tests.answering.drafting.support import DraftingModel, Shop, build_shop
from tests.providers.openai_server import ScriptedOpenAIServer


@pytest.fixture(params=["chat-completions"])
def chat_api(request) -> str:
    return request.param


@pytest.fixture
def drafting(answering) -> Iterator[ScriptedOpenAIServer]:
    """Embeddings and chat from the scripted server (tests/answering/fixtures.py's `answering`);
    the drafting roles fall back to the chat endpoint, so that set-up serves them too."""
    yield answering
    for role in DRAFTING_ROLES:
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

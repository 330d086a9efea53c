"""Answering's fixtures, shared with the audit tests (registered by tests/conftest.py):
the real `openai` client against the scripted server, for chat and embeddings."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator

import pytest

from mailbox.services.embedding import embed_pending
from mailbox.services.lexical_search import refresh_term_stats
from mailfathom.core.config import CHAT_APIS
from mailfathom.providers import health
from tests.answering.support import AdversarialMessage, ObedientModel, World, build_world
from tests.configure import configure, scripted_embeddings
from tests.providers.openai_server import ScriptedOpenAIServer


@pytest.fixture(params=CHAT_APIS)
def chat_api(request) -> str:
    return request.param


@pytest.fixture
def answering(settings, scripted, chat_api) -> Iterator[ScriptedOpenAIServer]:
    """Embeddings and chat both served by `scripted`; answering available; health isolated."""
    settings.PROVIDER_HEALTH_NAMESPACE = f"test-answering-{uuid.uuid4().hex}"
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
    health.clear_health("embedding")
    health.clear_health("chat")


def chat_endpoint(chat_api: str) -> str:
    return "chat/completions" if chat_api == "chat-completions" else "responses"


def chat_script(server: ScriptedOpenAIServer, chat_api: str):
    return server.chat if chat_api == "chat-completions" else server.responses


@pytest.fixture
def world(answering) -> Callable[..., World]:
    """Build the mailbox (optionally with one adversarial message), embed it, index its terms."""

    def build(adversarial: AdversarialMessage | None = None) -> World:
        built = build_world(adversarial=adversarial)
        embed_pending()
        refresh_term_stats()
        return built

    return build


@pytest.fixture
def obedient(answering, chat_api) -> ObedientModel:
    """The substitute model answering every chat request of this test."""
    model = ObedientModel()
    chat_script(answering, chat_api).always(model)
    return model

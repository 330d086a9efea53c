"""What every test of ask_mail over /mcp sets up alike: the server's environment and the world.

The uvicorn server and the test process must embed with the same scripted endpoint, or the
server could not place a query in the space the mail was embedded in.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from mailbox.services.embedding import embed_pending
from mailbox.services.lexical_search import refresh_term_stats
from mailfathom.providers import health
from tests.answering.support import ObedientModel, World, build_world
from tests.configure import configure, scripted_embeddings
from tests.providers.openai_server import ScriptedOpenAIServer


def embedding_env(server: ScriptedOpenAIServer) -> dict[str, str]:
    """A server process's environment for embeddings from the scripted `server`."""
    return {
        "MAILFATHOM_EMBEDDING_PROVIDER": "openai",
        "MAILFATHOM_EMBEDDING_BASE_URL": server.base_url,
        "MAILFATHOM_EMBEDDING_MODEL": "text-embed",
        "MAILFATHOM_EMBEDDING_API_KEY": "k",
    }


def answering_env(server: ScriptedOpenAIServer, *, alias: str = "scripted-endpoint") -> dict[str, str]:
    """Embeddings and chat both from the scripted `server`: ask_mail is offered."""
    return {
        **embedding_env(server),
        "MAILFATHOM_CHAT_PROVIDER": "openai",
        "MAILFATHOM_CHAT_ALIAS": alias,
        "MAILFATHOM_CHAT_BASE_URL": server.base_url,
        "MAILFATHOM_CHAT_MODEL": "scripted-chat",
        "MAILFATHOM_CHAT_API_KEY": "k",
        "MAILFATHOM_CHAT_TIMEOUT_SECONDS": "5",
        "MAILFATHOM_CHAT_MAX_RETRIES": "0",
    }


@contextmanager
def obedient_world(settings: Any, scripted: ScriptedOpenAIServer, **build: Any) -> Iterator[World]:
    """The mailbox built, embedded and indexed, with a model that obeys the mail; health cleared."""
    configure(settings, **scripted_embeddings(scripted))
    health.clear_health("chat")
    health.clear_health("embedding")
    built = build_world(**build)
    embed_pending()
    refresh_term_stats()
    scripted.chat.always(ObedientModel())
    try:
        yield built
    finally:
        health.clear_health("chat")

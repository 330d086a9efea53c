"""Chat and embedding providers: the local embedder, OpenAI-compatible clients, resilience, health.

The chat model ask_mail talks to is built the same way from the MAILFATHOM_CHAT_* settings
by `get_chat_model()`, through `CHAT_BACKENDS`, and always wrapped in
mailfathom.providers.chat.ResilientChat; it is None while MAILFATHOM_CHAT_PROVIDER is "none".

The embedder is configured by the MAILFATHOM_EMBEDDING_* settings (mailfathom.config) and
built once per process by `get_embedder()`, the one handler Django's backend pattern asks
for: `EMBEDDING_BACKENDS` maps each MAILFATHOM_EMBEDDING_PROVIDER choice to a dotted
backend class, so adding a provider touches that registry (and the setting's choices) and
nothing else. A backend class offers `from_settings(values)` and
`configuration_problems(values)`.

What callers get is always wrapped in mailfathom.providers.resilience.ResilientEmbedder:
deadline, retries, circuit and concurrency limit, with every outcome written to the shared
health record (mailfathom.providers.health). This package imports no app.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Mapping
from typing import Any

from django.conf import settings
from django.utils.module_loading import import_string

from mailfathom.providers.base import Embedder, EmbeddingProfileSpec
from mailfathom.providers.chat import (
    CHAT_ROLE,
    ChatMessage,
    ChatModel,
    ChatReply,
    ResilientChat,
    ToolCall,
    ToolDefinition,
)
from mailfathom.providers.errors import ProviderError, provider_code
from mailfathom.providers.resilience import Resilience, ResilientEmbedder

__all__ = [
    "CHAT_BACKENDS",
    "CHAT_ROLE",
    "EMBEDDING_BACKENDS",
    "EMBEDDING_ROLE",
    "Embedder",
    "EmbeddingProfileSpec",
    "ChatMessage",
    "ChatModel",
    "ChatReply",
    "ProviderError",
    "ToolCall",
    "ToolDefinition",
    "build_chat_model",
    "build_embedder",
    "chat_configuration_problems",
    "embedding_configuration_problems",
    "get_chat_model",
    "get_embedder",
    "provider_code",
    "reset_chat_model",
    "reset_embedder",
]

EMBEDDING_ROLE = "embedding"
EMBEDDING_BACKENDS: dict[str, str] = {
    "local": "mailfathom.providers.local.LocalEmbedder",
    "openai": "mailfathom.providers.openai_compat.OpenAIEmbedder",
}

CHAT_BACKENDS: dict[str, str] = {
    "openai": "mailfathom.providers.openai_chat.OpenAIChat",
}

_lock = threading.Lock()
_embedder: tuple[int, Embedder | None] | None = None
_chat_model: tuple[int, ChatModel | None] | None = None


def build_embedder(values: Mapping[str, Any]) -> Embedder | None:
    """A new resilient embedder from MAILFATHOM_* `values`; None when the provider is "none"."""
    provider = values["MAILFATHOM_EMBEDDING_PROVIDER"]
    if provider == "none":
        return None
    backend = import_string(EMBEDDING_BACKENDS[provider]).from_settings(values)
    return ResilientEmbedder(backend, Resilience.from_settings(values, EMBEDDING_ROLE))


def get_embedder() -> Embedder | None:
    """This process's embedder, built from the settings on first use; None when none is configured.

    A forked child (a Celery prefork worker) builds its own rather than sharing its parent's
    HTTP connections, locks and engine threads.
    """
    global _embedder
    with _lock:
        if _embedder is None or _embedder[0] != os.getpid():
            _embedder = (os.getpid(), build_embedder(settings.MAILFATHOM))
        return _embedder[1]


def reset_embedder() -> None:
    """Forget this process's embedder so the next `get_embedder()` reads the settings again."""
    global _embedder
    with _lock:
        _embedder = None


def embedding_configuration_problems(values: Mapping[str, Any] | None = None) -> list[str]:
    """Sentences naming each MAILFATHOM_EMBEDDING_* setting that does not fit the chosen provider.

    Meant for a system check; it imports the backend class but builds nothing.
    """
    values = settings.MAILFATHOM if values is None else values
    provider = values["MAILFATHOM_EMBEDDING_PROVIDER"]
    if provider == "none":
        return []
    return import_string(EMBEDDING_BACKENDS[provider]).configuration_problems(values)


def build_chat_model(values: Mapping[str, Any]) -> ChatModel | None:
    """A new resilient chat model from MAILFATHOM_* `values`; None when the provider is "none"."""
    provider = values["MAILFATHOM_CHAT_PROVIDER"]
    if provider == "none":
        return None
    backend = import_string(CHAT_BACKENDS[provider]).from_settings(values)
    return ResilientChat(backend, Resilience.from_settings(values, CHAT_ROLE))


def get_chat_model() -> ChatModel | None:
    """This process's chat model, built from the settings on first use; None when none is configured.

    Like `get_embedder()`, a forked child builds its own.
    """
    global _chat_model
    with _lock:
        if _chat_model is None or _chat_model[0] != os.getpid():
            _chat_model = (os.getpid(), build_chat_model(settings.MAILFATHOM))
        return _chat_model[1]


def reset_chat_model() -> None:
    """Forget this process's chat model so the next `get_chat_model()` reads the settings again."""
    global _chat_model
    with _lock:
        _chat_model = None


def chat_configuration_problems(values: Mapping[str, Any] | None = None) -> list[str]:
    """Sentences naming each MAILFATHOM_CHAT_* setting that does not fit the chosen provider.

    Meant for a system check; it imports the backend class but builds nothing.
    """
    values = settings.MAILFATHOM if values is None else values
    provider = values["MAILFATHOM_CHAT_PROVIDER"]
    if provider == "none":
        return []
    return import_string(CHAT_BACKENDS[provider]).configuration_problems(values)

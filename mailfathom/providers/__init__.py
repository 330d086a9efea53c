"""Chat and embedding providers: the local embedder, OpenAI-compatible clients, resilience, health.

Every role (the embedder, ask_mail's chat model, drafting's utility and drafting models) goes
through one ProviderHandler and a registry mapping a provider choice to a backend class, so
adding a provider touches that registry and the setting's choices only. Callers always get
the role's resilience wrapper (deadline, retries, circuit, concurrency limit, shared health
record); a role is None while its provider is "none". This package imports no app.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable
from typing import Any, Generic, TypeVar

from django.conf import settings
from django.utils.module_loading import import_string

from mailfathom.core.config import DRAFTING_ROLE, UTILITY_ROLE, MailFathomSettings
from mailfathom.core.resettable import forgotten_when_changed
from mailfathom.providers.base import EMBEDDING_ROLE, Embedder, EmbeddingProfileSpec
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

P = TypeVar("P")
logger = logging.getLogger("mailfathom.providers")

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
    "warm_embedder",
    "provider_code",
    "chat_models",
    "drafting_models",
    "utility_models",
    "embedders",
    "ProviderHandler",
]

EMBEDDING_BACKENDS: dict[str, str] = {
    "local": "mailfathom.providers.local.LocalEmbedder",
    "openai": "mailfathom.providers.openai_compat.OpenAIEmbedder",
}

CHAT_BACKENDS: dict[str, str] = {
    "openai": "mailfathom.providers.openai_chat.OpenAIChat",
}


class ProviderHandler(Generic[P]):
    """One role's provider: built from the settings on first use, once per process.

    `backends` maps each choice of the role's provider setting to a dotted backend class
    offering `from_settings(values)` and `configuration_problems(values)`; what callers get
    is the backend wrapped in `wrapper` (the role's resilience). A forked child (a Celery
    prefork worker) builds its own rather than sharing its parent's connections, locks and
    engine threads. The instance is forgotten whenever the settings change.
    """

    def __init__(
        self,
        role: str,
        backends: dict[str, str],
        wrapper: Callable[[Any, Resilience], P],
        *,
        names_role: bool = False,
    ) -> None:
        self.role = role
        # A backend serving several roles (OpenAIChat: chat, utility, drafting) is told which.
        self._role_arguments: dict[str, str] = {"role": role} if names_role else {}
        self.backends = backends
        self._wrapper = wrapper
        self._lock = threading.Lock()
        self._built: tuple[int, P | None] | None = None
        forgotten_when_changed("MAILFATHOM")(self.reset)

    def build(self, values: MailFathomSettings) -> P | None:
        """A new resilient provider from `values`; None when the role's provider is "none"."""
        endpoint = values.endpoint(self.role)
        if not endpoint.configured:
            return None
        backend_class = import_string(self.backends[endpoint.provider])
        backend = backend_class.from_settings(values, **self._role_arguments)
        return self._wrapper(backend, Resilience.from_endpoint(endpoint))

    def get(self) -> P | None:
        """This process's provider, built from the settings on first use."""
        with self._lock:
            if self._built is None or self._built[0] != os.getpid():
                self._built = (os.getpid(), self.build(settings.MAILFATHOM))
            return self._built[1]

    def reset(self) -> None:
        """Forget this process's provider so the next `get()` reads the settings again."""
        with self._lock:
            self._built = None

    def configuration_problems(self, values: MailFathomSettings | None = None) -> list[str]:
        """Sentences naming each setting of this role that does not fit the chosen provider.

        Meant for a system check; it imports the backend class but builds nothing.
        """
        values = settings.MAILFATHOM if values is None else values
        endpoint = values.endpoint(self.role)
        if not endpoint.configured:
            return []
        backend = import_string(self.backends[endpoint.provider])
        problems: list[str] = backend.configuration_problems(values, **self._role_arguments)
        return problems


embedders: ProviderHandler[Embedder] = ProviderHandler(EMBEDDING_ROLE, EMBEDDING_BACKENDS, ResilientEmbedder)
chat_models: ProviderHandler[ChatModel] = ProviderHandler(CHAT_ROLE, CHAT_BACKENDS, ResilientChat)
# Reply drafting's two roles (docs/operations/drafting.md): each falls back to the chat
# endpoint's settings where its own are unset, and keeps its own resilience and health.
utility_models: ProviderHandler[ChatModel] = ProviderHandler(
    UTILITY_ROLE, CHAT_BACKENDS, ResilientChat, names_role=True
)
drafting_models: ProviderHandler[ChatModel] = ProviderHandler(
    DRAFTING_ROLE, CHAT_BACKENDS, ResilientChat, names_role=True
)

build_embedder = embedders.build
get_embedder = embedders.get
embedding_configuration_problems = embedders.configuration_problems
build_chat_model = chat_models.build
get_chat_model = chat_models.get
chat_configuration_problems = chat_models.configuration_problems


def warm_embedder(*, wait: bool) -> None:
    """Load the configured embedder's model in this process now, so no request or task does.

    Called as a web server or worker starts (mailfathom.asgi, mailfathom.wsgi,
    mailfathom.celery). `wait=False` starts the load on a background thread and returns;
    `wait=True` returns once it is over (a failed or overlong load is logged and recorded in
    the provider's health; the process starts anyway, with semantic search degraded). Does
    nothing while MAILFATHOM_EMBEDDING_WARM_START is off or no embedding provider is
    configured; a provider with nothing to load (an HTTP endpoint) has nothing to do.
    """
    if not settings.MAILFATHOM.embedding_warm_start:
        return
    embedder = get_embedder()
    if embedder is None or embedder.loaded:
        return
    if not wait:
        embedder.warm()
        return
    try:
        embedder.ensure_loaded()
    except ProviderError as error:
        logger.warning("embedding model not loaded at start: kind=%s", error.kind)

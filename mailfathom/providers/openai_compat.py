"""Embeddings from any OpenAI-compatible endpoint (OpenAI, Azure, Ollama, vLLM, llama.cpp).

The official `openai` SDK does the talking, with its own retries switched off: the
resilience wrapper owns retries, so a call is never retried twice over. Every SDK failure
is translated by `translate_error` (shared with the chat client) into a ProviderError that
says whether repeating it can help, and the SDK's message, which may quote the request
back, is dropped rather than chained.

e5 models expect "query: " / "passage: " before each text; the prefixes are added when the
configured model name contains the token e5 and never otherwise.
"""

from __future__ import annotations

import email.utils
import logging
import math
import time
from collections.abc import Mapping

import openai

from mailfathom.core.config import Endpoint, MailFathomSettings
from mailfathom.providers.base import (
    E5_PASSAGE_PREFIX,
    E5_QUERY_PREFIX,
    EMBEDDING_ROLE,
    EmbeddingBackend,
    EmbeddingProfileSpec,
    clean_text,
    is_e5_model,
)
from mailfathom.providers.errors import (
    BAD_RESPONSE,
    CREDENTIAL_REFUSED,
    MODEL_MISMATCH,
    RATE_LIMITED,
    TIMEOUT,
    UNAVAILABLE,
    ProviderError,
)

OPENAI_BASE_URL = "https://api.openai.com/v1"
# Sent when no key is configured: local servers (Ollama, vLLM) ignore it, the SDK needs one.
NO_KEY = "no-key-configured"

# The SDK logs request metadata only, but its transport may log URLs; keep both quiet
# unless an operator configures them on purpose.
for _name in ("openai", "httpx2", "httpcore2"):
    logging.getLogger(_name).setLevel(logging.WARNING)


def parse_retry_after(headers: Mapping[str, str] | None) -> float | None:
    """Seconds a provider asked to wait (retry-after-ms, or Retry-After in seconds or as a date)."""
    if not headers:
        return None
    millis = headers.get("retry-after-ms")
    if millis:
        try:
            value = float(millis) / 1000
            return value if math.isfinite(value) and value >= 0 else None
        except ValueError:
            pass
    raw = headers.get("retry-after")
    if not raw:
        return None
    try:
        value = float(raw)
        return value if math.isfinite(value) and value >= 0 else None
    except ValueError:
        pass
    try:
        moment = email.utils.parsedate_to_datetime(raw)
    except (TypeError, ValueError):
        return None
    return max(0.0, moment.timestamp() - time.time())


def translate_error(error: Exception, role: str) -> ProviderError:
    """Classify an exception the `openai` SDK raised (nothing of its message is kept)."""
    if isinstance(error, openai.APITimeoutError):
        return ProviderError(TIMEOUT, True, role=role)
    if isinstance(error, openai.APIConnectionError):
        return ProviderError(UNAVAILABLE, True, role=role)
    if isinstance(error, openai.APIStatusError):
        status = error.status_code
        if status in (401, 403):
            return ProviderError(CREDENTIAL_REFUSED, False, role=role, status=status)
        if status == 404:
            return ProviderError(MODEL_MISMATCH, False, role=role, status=status)
        retry_after = parse_retry_after(error.response.headers)
        if status == 429:
            return ProviderError(RATE_LIMITED, True, role=role, status=status, retry_after=retry_after)
        if status == 408:
            return ProviderError(TIMEOUT, True, role=role, status=status)
        if status == 409 or status >= 500:
            return ProviderError(UNAVAILABLE, True, role=role, status=status, retry_after=retry_after)
        return ProviderError(BAD_RESPONSE, False, role=role, status=status)
    if isinstance(error, openai.APIResponseValidationError | ValueError | TypeError | KeyError):
        return ProviderError(BAD_RESPONSE, False, role=role)
    return ProviderError(UNAVAILABLE, False, role=role)


def endpoint_problems(endpoint: Endpoint, prefix: str, provider_phrase: str) -> list[str]:
    """What an OpenAI-compatible endpoint of either role needs: a model and an http(s) URL.

    `prefix` is the role's settings prefix (MAILFATHOM_CHAT_), used only to name them.
    """
    problems = []
    if not endpoint.model.strip():
        problems.append(f"{prefix}MODEL must name a model when {provider_phrase} is openai.")
    if endpoint.base_url and not endpoint.base_url.startswith(("http://", "https://")):
        problems.append(f"{prefix}BASE_URL must start with http:// or https://.")
    return problems


def make_client(base_url: str, api_key: str, timeout: float) -> openai.OpenAI:
    """An SDK client for `base_url` that never retries on its own (key and URL never from OPENAI_*)."""
    return openai.OpenAI(
        base_url=base_url or OPENAI_BASE_URL,
        api_key=api_key or NO_KEY,
        timeout=timeout,
        max_retries=0,
    )


class OpenAIEmbedder(EmbeddingBackend):
    """POST /embeddings on an OpenAI-compatible endpoint; vectors checked for count and size."""

    provider = "openai"

    def __init__(
        self,
        *,
        model: str,
        dimensions: int,
        base_url: str = "",
        api_key: str = "",
        timeout: float = 10.0,
        max_batch: int = 64,
    ) -> None:
        self._profile = EmbeddingProfileSpec(self.provider, model, dimensions)
        self._max_batch = max_batch
        self._timeout = timeout
        self._e5 = is_e5_model(model)
        self._client = make_client(base_url, api_key, timeout)

    @classmethod
    def from_settings(cls, values: MailFathomSettings) -> OpenAIEmbedder:
        return cls(
            model=values.embedding_model,
            dimensions=values.embedding_dimensions,
            base_url=values.embedding_base_url,
            api_key=values.embedding_api_key,
            timeout=values.embedding_timeout_seconds,
        )

    @staticmethod
    def configuration_problems(values: MailFathomSettings) -> list[str]:
        return endpoint_problems(values.endpoint(EMBEDDING_ROLE), "MAILFATHOM_EMBEDDING_", "the provider")

    @property
    def profile(self) -> EmbeddingProfileSpec:
        return self._profile

    @property
    def max_batch(self) -> int:
        return self._max_batch

    def embed(self, texts: list[str], *, query: bool, timeout: float | None) -> list[list[float]]:
        if not texts:
            return []
        prefix = (E5_QUERY_PREFIX if query else E5_PASSAGE_PREFIX) if self._e5 else ""
        # The API refuses an empty string; one space embeds as "nothing" everywhere.
        inputs = [prefix + clean_text(text) for text in texts]
        inputs = [item if item.strip() else " " for item in inputs]
        # The failure is raised outside the handler so it carries no __context__: the SDK's
        # exception may quote the request, and a traceback would print it.
        failure: ProviderError | None = None
        try:
            response = self._client.embeddings.create(
                model=self._profile.model,
                input=inputs,
                encoding_format="float",
                timeout=self._timeout if timeout is None else timeout,
            )
            rows = sorted(response.data, key=lambda item: item.index)
            vectors = [list(map(float, row.embedding)) for row in rows]
        except openai.OpenAIError as error:
            failure = translate_error(error, "embedding")
        except (ValueError, TypeError, AttributeError):
            failure = ProviderError(BAD_RESPONSE, False)
        if failure is not None:
            raise failure
        if len(vectors) != len(texts):
            raise ProviderError(BAD_RESPONSE, False)
        if any(len(vector) != self._profile.dimensions for vector in vectors):
            raise ProviderError(MODEL_MISMATCH, False)
        return vectors

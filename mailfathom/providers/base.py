"""The embedding interface every backend and the resilience wrapper implement.

An Embedder turns passages (mail text to be indexed) and queries (what a search asks) into
L2-comparable vectors of `profile.dimensions` floats. Two methods rather than one flag,
because asymmetric models (the e5 family) embed the two sides differently, and a caller
that mixed them would get vectors that compare badly without any error to say so.

A backend implements `embed(texts, query=..., timeout=...)`; the base class supplies the
two public methods on top of it. `get_embedder()` (mailfathom.providers) never hands out
a bare backend: it wraps it in mailfathom.providers.resilience.ResilientEmbedder.
"""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from dataclasses import dataclass

E5_QUERY_PREFIX = "query: "
E5_PASSAGE_PREFIX = "passage: "
_E5_NAME = re.compile(r"(?:^|[^a-z0-9])e5(?:[^a-z0-9]|$)")

EMBEDDING_ROLE = "embedding"


@dataclass(frozen=True)
class EmbeddingProfileSpec:
    """Which vector space an embedder places text in: vectors from two specs never mix."""

    provider: str
    model: str
    dimensions: int


def is_e5_model(model: str) -> bool:
    """Whether `model` names an e5 model (which expects query:/passage: prefixes)."""
    return bool(_E5_NAME.search(model.lower()))


def clean_text(text: str) -> str:
    """`text` as every backend can send it: NUL ends a C string early, and a lone surrogate
    (left by a lenient decode of broken mail) cannot be encoded as UTF-8 at all."""
    return text.replace("\x00", " ").encode("utf-8", "replace").decode("utf-8")


class Embedder(ABC):
    """Embeds passages and queries into one vector space, described by `profile`."""

    @property
    @abstractmethod
    def profile(self) -> EmbeddingProfileSpec:
        """The provider, model and dimensions of the vectors this embedder returns."""

    @property
    @abstractmethod
    def max_batch(self) -> int:
        """The most texts one `embed_passages` call accepts; callers split longer lists."""

    @abstractmethod
    def embed_passages(self, texts: list[str]) -> list[list[float]]:
        """Return one vector per text, in order, for text to be indexed and searched."""

    @abstractmethod
    def embed_query(self, text: str) -> list[float]:
        """Return the vector of one search query."""

    # Loading, kept apart from calling (most backends have nothing to load): a model read
    # into this process must be loaded before a call's deadline starts, never inside it.

    @property
    def loaded(self) -> bool:
        """Whether a call can start at once, with nothing left to load in this process."""
        return True

    def warm(self) -> None:  # noqa: B027 (optional)
        """Start loading what the first call needs on a background thread, and return."""

    def ensure_loaded(self) -> None:  # noqa: B027 (optional)
        """Load what the first call needs, or wait for the load under way; no call is made.

        Raises ProviderError when the load fails or takes longer than the backend's own bound.
        """


class EmbeddingBackend(Embedder):
    """A concrete client (local model, HTTP endpoint) without resilience of its own.

    `embed` may be given the time left in the call's deadline as `timeout` and should pass
    it to any network client it uses; it raises ProviderError for every failure it can
    classify, and must never put input text into an exception or a log line.
    """

    @abstractmethod
    def embed(self, texts: list[str], *, query: bool, timeout: float | None) -> list[list[float]]:
        """Embed `texts` as queries (`query=True`) or passages."""

    def embed_passages(self, texts: list[str]) -> list[list[float]]:
        return self.embed(list(texts), query=False, timeout=None)

    def embed_query(self, text: str) -> list[float]:
        return self.embed([text], query=True, timeout=None)[0]

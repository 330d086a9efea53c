"""Deadline, bounded retries, circuit breaker and concurrency limit around provider calls.

In order: a non-blocking concurrency limit (Overloaded at once: a bulkhead rejects rather
than queues); the circuit (open after N failures, one half-open probe); a deadline over the
whole call, enforced on a worker thread so a backend ignoring its timeout cannot hold the
caller (it starts once the backend has loaded what it needs: ResilientEmbedder waits for a
local model's load first, outside the deadline); retries of transient failures only, with
back-off, never past the deadline. Each final outcome feeds the circuit and the shared
health record, except MailFathom's own refusals (nothing reached the provider). Circuit and
limit are per process.
"""

from __future__ import annotations

import logging
import math
import random
import threading
import time
from collections.abc import Callable
from typing import Any, TypeVar, cast

from mailfathom.core.config import Endpoint
from mailfathom.providers import health
from mailfathom.providers.base import Embedder, EmbeddingBackend, EmbeddingProfileSpec
from mailfathom.providers.errors import (
    BAD_RESPONSE,
    CIRCUIT_OPEN,
    MODEL_MISMATCH,
    OVERLOADED,
    TIMEOUT,
    UNAVAILABLE,
    ProviderError,
)

logger = logging.getLogger("mailfathom.providers")
T = TypeVar("T")

CLOSED, OPEN, HALF_OPEN = "closed", "open", "half_open"


def backoff_delay(attempt: int, base: float, cap: float, rng: Callable[[], float] = random.random) -> float:
    """Seconds to wait before retry `attempt` (0-based): half exponential, half jitter."""
    ceiling: float = min(cap, base * 2**attempt)
    return ceiling / 2 + rng() * ceiling / 2


class CircuitBreaker:
    """Counts consecutive failed calls; opens after `failures` of them for `open_seconds`."""

    def __init__(self, failures: int, open_seconds: float, clock: Callable[[], float] = time.monotonic):
        self.failures = failures
        self.open_seconds = open_seconds
        self._clock = clock
        self._lock = threading.Lock()
        self._state = CLOSED
        self._count = 0
        self._opened_at = 0.0
        self._probing = False

    @property
    def state(self) -> str:
        with self._lock:
            if self._state == OPEN and self._clock() - self._opened_at >= self.open_seconds:
                return HALF_OPEN
            return self._state

    def admit(self) -> bool:
        """Whether a call may go out now; in half-open state only one (the probe) may."""
        with self._lock:
            if self._state == CLOSED:
                return True
            if self._state == OPEN and self._clock() - self._opened_at >= self.open_seconds:
                self._state = HALF_OPEN
            if self._state == HALF_OPEN and not self._probing:
                self._probing = True
                return True
            return False

    def success(self) -> None:
        with self._lock:
            self._state, self._count, self._probing = CLOSED, 0, False

    def failure(self) -> bool:
        """Count a failed call; return True when this failure opened the circuit."""
        with self._lock:
            if self._state == OPEN:  # a call admitted before it opened: the window stands
                return False
            self._count += 1
            if self._state == HALF_OPEN or self._count >= self.failures:
                self._state, self._opened_at, self._probing = OPEN, self._clock(), False
                return True
            return False


class ConcurrencyLimit:
    """A semaphore that never waits: a call beyond `limit` in flight is refused."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._semaphore = threading.BoundedSemaphore(limit)

    def try_acquire(self) -> bool:
        return self._semaphore.acquire(blocking=False)

    def release(self) -> None:
        self._semaphore.release()


class _Outcome:
    def __init__(self) -> None:
        self.done = threading.Event()
        self.value: Any = None
        self.error: ProviderError | None = None
        self.attempts = 0


class Resilience:
    """The resilience budget of one provider role (see the module docstring)."""

    def __init__(
        self,
        role: str,
        *,
        deadline: float,
        max_retries: int,
        concurrency: int,
        circuit_failures: int,
        circuit_seconds: float,
        backoff_base: float = 0.25,
        backoff_cap: float = 4.0,
        retry_after_cap: float = 30.0,
    ) -> None:
        self.role = role
        self.deadline = deadline
        self.max_retries = max_retries
        self.backoff_base = backoff_base
        self.backoff_cap = backoff_cap
        self.retry_after_cap = retry_after_cap
        self.limit = ConcurrencyLimit(concurrency)
        self.circuit = CircuitBreaker(circuit_failures, circuit_seconds)

    @classmethod
    def from_endpoint(cls, endpoint: Endpoint) -> Resilience:
        """The budget a role's settings declare (timeout, retries, concurrency, circuit)."""
        return cls(
            endpoint.role,
            deadline=endpoint.timeout_seconds,
            max_retries=endpoint.max_retries,
            concurrency=endpoint.concurrency,
            circuit_failures=endpoint.circuit_failures,
            circuit_seconds=endpoint.circuit_seconds,
        )

    def call(self, operation: Callable[[float], T], *, size: int = 0) -> T:
        """Run `operation(seconds_left)` under the budget; `size` (a count) is only logged."""
        if not self.limit.try_acquire():
            raise ProviderError(OVERLOADED, True, role=self.role)
        handed_over = False
        try:
            if not self.circuit.admit():
                raise ProviderError(CIRCUIT_OPEN, True, role=self.role)
            deadline = time.monotonic() + self.deadline
            outcome = _Outcome()
            worker = threading.Thread(
                target=self._attempts,
                args=(operation, deadline, outcome),
                name=f"mailfathom-{self.role}-call",
                daemon=True,
            )
            try:
                worker.start()
                handed_over = True
            except RuntimeError:
                outcome.error = ProviderError(UNAVAILABLE, True, role=self.role)
                outcome.done.set()
            if outcome.done.wait(max(0.0, deadline - time.monotonic())):
                error, value = outcome.error, outcome.value
            else:
                error, value = ProviderError(TIMEOUT, True, role=self.role), None
            self.settle(error, outcome.attempts, size)
            if error is not None:
                raise error
            return cast(T, value)  # the call's result whenever no error was recorded
        finally:
            if not handed_over:
                self.limit.release()

    def _attempts(self, operation: Callable[[float], Any], deadline: float, outcome: _Outcome) -> None:
        try:
            attempt = 0
            while True:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise ProviderError(TIMEOUT, True, role=self.role)
                outcome.attempts = attempt + 1
                try:
                    outcome.value = operation(left)
                    return
                except ProviderError as error:
                    if not error.transient or attempt >= self.max_retries:
                        raise
                    delay = self._delay(attempt, error)
                    if time.monotonic() + delay >= deadline:
                        raise
                    time.sleep(delay)
                    attempt += 1
        except ProviderError as error:
            outcome.error = error
        except Exception as error:  # a backend bug: classified, never re-raised with its text
            logger.error("%s provider call raised %s", self.role, type(error).__name__)
            outcome.error = ProviderError(UNAVAILABLE, False, role=self.role)
        finally:
            self.limit.release()
            outcome.done.set()

    def _delay(self, attempt: int, error: ProviderError) -> float:
        if error.retry_after is not None:
            return min(error.retry_after, self.retry_after_cap)
        return backoff_delay(attempt, self.backoff_base, self.backoff_cap)

    def settle(self, error: ProviderError | None, attempts: int, size: int) -> None:
        """Tell the circuit and the health record how the call ended (kinds and counts only)."""
        if error is None:
            was_open = self.circuit.state != CLOSED
            self.circuit.success()
            health.record_success(self.role)
            if was_open:
                logger.info("%s provider circuit closed", self.role)
            return
        kind = error.kind
        logger.warning(
            "%s provider call failed: kind=%s attempts=%d texts=%d", self.role, kind, attempts, size
        )
        if self.circuit.failure():
            logger.warning("%s provider circuit opened for %ss", self.role, f"{self.circuit.open_seconds:g}")
        health.record_failure(self.role, kind)


class ResilientEmbedder(Embedder):
    """An EmbeddingBackend behind a Resilience budget; every answer is checked before use."""

    def __init__(self, backend: EmbeddingBackend, resilience: Resilience) -> None:
        self.backend = backend
        self.resilience = resilience

    @property
    def profile(self) -> EmbeddingProfileSpec:
        return self.backend.profile

    @property
    def max_batch(self) -> int:
        return self.backend.max_batch

    def embed_passages(self, texts: list[str]) -> list[list[float]]:
        if len(texts) > self.max_batch:
            raise ValueError(f"embed_passages accepts at most {self.max_batch} texts per call")
        if not all(isinstance(text, str) for text in texts):
            raise TypeError("embed_passages accepts a list of strings")
        if not texts:
            return []
        return self._call(list(texts), query=False)

    def embed_query(self, text: str) -> list[float]:
        if not isinstance(text, str):
            raise TypeError("embed_query accepts a string")
        return self._call([text], query=True)[0]

    @property
    def loaded(self) -> bool:
        return self.backend.loaded

    def warm(self) -> None:
        self.backend.warm()

    def ensure_loaded(self) -> None:
        """Wait for the backend's load; a failed one counts like a failed call."""
        try:
            self.backend.ensure_loaded()
        except ProviderError as error:
            self.resilience.settle(error, attempts=0, size=0)
            raise

    def _call(self, texts: list[str], *, query: bool) -> list[list[float]]:
        # The deadline is for the call: a model still loading (the first call of a process
        # that was not warmed, or one made while the warm-up runs) is waited for first,
        # outside it, so a slow load never fails the batch that happened to come first.
        if not self.backend.loaded:
            self.ensure_loaded()

        def operation(seconds_left: float) -> list[list[float]]:
            vectors = self.backend.embed(texts, query=query, timeout=seconds_left)
            return self._checked(vectors, len(texts))

        return self.resilience.call(operation, size=len(texts))

    def _checked(self, vectors: list[list[float]], count: int) -> list[list[float]]:
        if len(vectors) != count:
            raise ProviderError(BAD_RESPONSE, False)
        dimensions = self.profile.dimensions
        for vector in vectors:
            if len(vector) != dimensions:
                raise ProviderError(MODEL_MISMATCH, False)
            if not all(math.isfinite(value) for value in vector):
                raise ProviderError(BAD_RESPONSE, False)
        return vectors

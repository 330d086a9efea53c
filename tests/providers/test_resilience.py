"""Circuit breaker, concurrency limit, deadline and back-off, against the scripted server."""

from __future__ import annotations

import threading
import time

from mailfathom.providers.base import EmbeddingBackend, EmbeddingProfileSpec
from mailfathom.providers.health import read_health
from mailfathom.providers.resilience import (
    CLOSED,
    HALF_OPEN,
    OPEN,
    CircuitBreaker,
    Resilience,
    ResilientEmbedder,
    backoff_delay,
)
from tests.providers.openai_server import hang, status
from tests.support import failure, wait_for


def test_circuit_opens_after_n_failures_and_then_fails_fast(resilient_openai, openai_server):
    embedder = resilient_openai(max_retries=0, circuit_failures=3)
    openai_server.embeddings.script(*[status(500)] * 3)
    for _ in range(3):
        assert failure(lambda: embedder.embed_query("x")).kind == "unavailable"
    assert openai_server.count() == 3
    started = time.monotonic()
    error = failure(lambda: embedder.embed_query("x"))
    assert (error.kind, error.code) == ("circuit_open", 72001)
    assert time.monotonic() - started < 0.25
    assert openai_server.count() == 3  # nothing reached the server
    assert read_health("embedding").last_failure_kind == "unavailable"  # not circuit_open


def test_half_open_lets_one_probe_through_and_closes_on_success(resilient_openai, openai_server):
    embedder = resilient_openai(max_retries=0, circuit_failures=2, circuit_seconds=0.5)
    openai_server.embeddings.script(status(500), status(500), hang(1.0))
    for _ in range(2):
        failure(lambda: embedder.embed_query("x"))
    assert embedder.resilience.circuit.state == OPEN
    time.sleep(0.6)
    assert embedder.resilience.circuit.state == HALF_OPEN
    probe = threading.Thread(target=embedder.embed_query, args=("probe",))
    probe.start()
    wait_for(lambda: openai_server.count() == 3)
    assert failure(lambda: embedder.embed_query("x")).kind == "circuit_open"  # only one probe
    probe.join()
    assert embedder.resilience.circuit.state == CLOSED
    embedder.embed_query("after")
    assert openai_server.count() == 4


def test_a_failed_probe_opens_the_circuit_again(resilient_openai, openai_server):
    embedder = resilient_openai(max_retries=0, circuit_failures=2, circuit_seconds=0.3)
    openai_server.embeddings.script(status(500), status(500), status(401))
    for _ in range(2):
        failure(lambda: embedder.embed_query("x"))
    time.sleep(0.35)
    assert failure(lambda: embedder.embed_query("probe")).kind == "credential_refused"
    assert failure(lambda: embedder.embed_query("x")).kind == "circuit_open"
    assert openai_server.count() == 3


def test_the_concurrency_limit_rejects_rather_than_queues(resilient_openai, openai_server):
    embedder = resilient_openai(concurrency=2, deadline=5.0)
    openai_server.embeddings.script(hang(1.0), hang(1.0))
    callers = [threading.Thread(target=embedder.embed_query, args=(f"q{i}",)) for i in range(2)]
    for caller in callers:
        caller.start()
    wait_for(lambda: openai_server.count() == 2)
    started = time.monotonic()
    error = failure(lambda: embedder.embed_query("third"))
    assert (error.kind, error.transient, error.code) == ("overloaded", True, 72001)
    assert time.monotonic() - started < 0.25
    assert openai_server.count() == 2
    for caller in callers:
        caller.join()
    assert read_health("embedding").consecutive_failures == 0  # our refusal is not the provider's
    embedder.embed_query("afterwards")  # permits came back


class Stubborn(EmbeddingBackend):
    """A backend that ignores its timeout (as a C extension does) or raises what it is given."""

    def __init__(self, seconds: float = 0.0, error: Exception | None = None) -> None:
        self.seconds, self.error, self.finished = seconds, error, threading.Event()

    profile = EmbeddingProfileSpec("stub", "stub", 2)
    max_batch = 4

    def embed(self, texts, *, query, timeout):
        time.sleep(self.seconds)
        self.finished.set()
        if self.error:
            raise self.error
        return [[0.6, 0.8] for _ in texts]


def budget(**overrides) -> Resilience:
    values = dict(deadline=0.3, max_retries=0, concurrency=1, circuit_failures=5, circuit_seconds=60)
    return Resilience("embedding", **{**values, **overrides})


def test_the_deadline_holds_against_a_backend_that_ignores_it():
    backend = Stubborn(seconds=1.0)
    embedder = ResilientEmbedder(backend, budget())
    started = time.monotonic()
    assert failure(lambda: embedder.embed_query("x")).kind == "timeout"
    assert time.monotonic() - started < 0.9
    # the abandoned attempt still runs, so it still holds the only permit
    assert failure(lambda: embedder.embed_query("x")).kind == "overloaded"
    assert backend.finished.wait(2)
    wait_for(lambda: embedder.resilience.limit.try_acquire())
    embedder.resilience.limit.release()
    backend.seconds = 0
    assert embedder.embed_query("x") == [0.6, 0.8]


def test_an_unexpected_backend_exception_becomes_a_provider_error_without_its_text(caplog):
    embedder = ResilientEmbedder(Stubborn(error=RuntimeError("Dear Anna")), budget())
    error = failure(lambda: embedder.embed_query("x"))
    assert (error.kind, error.transient) == ("unavailable", False)
    assert "Dear Anna" not in caplog.text and "RuntimeError" in caplog.text


def test_vectors_of_the_wrong_shape_are_refused():
    class Short(Stubborn):
        def embed(self, texts, *, query, timeout):
            return [[1.0]]

    embedder = ResilientEmbedder(Short(), budget())
    assert failure(lambda: embedder.embed_passages(["a", "b"])).kind == "bad_response"
    assert failure(lambda: embedder.embed_query("a")).kind == "model_mismatch"


def test_backoff_is_exponential_with_bounded_jitter():
    assert [backoff_delay(n, 0.25, 4.0, rng=lambda: 0.0) for n in range(6)] == [0.125, 0.25, 0.5, 1, 2, 2]
    assert [backoff_delay(n, 0.25, 4.0, rng=lambda: 1.0) for n in range(6)] == [0.25, 0.5, 1, 2, 4, 4]


def test_circuit_breaker_state_machine_with_a_fake_clock():
    now = [0.0]
    circuit = CircuitBreaker(failures=2, open_seconds=10, clock=lambda: now[0])
    assert circuit.admit() and not circuit.failure()
    circuit.success()  # a success resets the count
    assert not circuit.failure() and circuit.failure()
    assert not circuit.admit()
    now[0] = 9.9
    assert not circuit.admit()
    now[0] = 10.0
    assert circuit.admit() and not circuit.admit()  # one probe only
    circuit.success()
    assert circuit.state == CLOSED and circuit.admit() and circuit.admit()

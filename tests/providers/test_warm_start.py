"""Warm start: the local model is loaded apart from any call, and a call's deadline never
includes the load (issue #26, item 4).

A machine too busy to load the model within the deadline cannot be produced on demand, so
these tests make the load slow instead: the local provider's `_load` is replaced by one that
sleeps longer than the call's deadline and returns a small stand-in engine (unit vectors of
the model's size). Everything around it is the product's own: the resilience wrapper with
its deadline, the sweep with its database writes, the health record, the warm-up entry
points. No test asserts how long anything took.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import threading
import time
from types import SimpleNamespace

import numpy as np
import pytest

from accounts.models import FolderRole
from mailbox.services.embedding import embed_pending
from mailfathom import celery as celery_module
from mailfathom.providers import EMBEDDING_ROLE, get_embedder, warm_embedder
from mailfathom.providers import local as local_module
from mailfathom.providers.errors import TIMEOUT, ProviderError
from mailfathom.providers.health import read_health
from mailfathom.providers.local import USE_MODEL, LocalEmbedder
from mailfathom.providers.resilience import Resilience, ResilientEmbedder
from tests.configure import configure
from tests.factories import MailAccountFactory
from tests.mailbox.factories import EmailFactory, mapped_folder

# Seconds. The deadline leaves a stand-in call (a few milliseconds) ample room even on a
# crowded test machine; SLOW (a load, or a call made slow on purpose) is well past it.
DEADLINE = 2
SLOW = 4.0


class StandInEngine:
    """What `_load` returns here: unit vectors of USE's size; `delay` makes each call slow."""

    def __init__(self, delay: float = 0.0) -> None:
        self.delay = delay

    def _vectors(self, texts: list[str]) -> np.ndarray:
        time.sleep(self.delay)
        rows = np.random.default_rng(len(texts)).normal(size=(len(texts), 512))
        return rows / np.linalg.norm(rows, axis=1, keepdims=True)

    def query(self, texts: list[str]) -> np.ndarray:
        return self._vectors(texts)

    def passage(self, texts: list[str]) -> np.ndarray:
        return self._vectors(texts)


class Loads:
    """A replacement for local._load: counts loads, sleeps `load_seconds`, returns a stand-in."""

    def __init__(self, load_seconds: float, call_seconds: float = 0.0) -> None:
        self.load_seconds = load_seconds
        self.call_seconds = call_seconds
        self.count = 0
        self._lock = threading.Lock()

    def __call__(self, model: str) -> StandInEngine:
        with self._lock:
            self.count += 1
        time.sleep(self.load_seconds)
        return StandInEngine(self.call_seconds)


@pytest.fixture
def fresh_process(monkeypatch):
    """This process as if just started: no engine loaded, no load under way."""
    monkeypatch.setattr(local_module, "_engines", {})
    monkeypatch.setattr(local_module, "_loading", {})

    def install(loads: Loads) -> Loads:
        monkeypatch.setattr(local_module, "_load", loads)
        return loads

    return install


@pytest.fixture
def local_with_short_deadline(settings):
    configure(
        settings,
        embedding_provider="local",
        embedding_model=USE_MODEL,
        embedding_dimensions=512,
        embedding_timeout_seconds=DEADLINE,
    )


@pytest.fixture
def pending_mail():
    account = MailAccountFactory(account_id="warm", display_name="Warm")
    inbox = mapped_folder(account, "inbox", FolderRole.INBOX)
    return [EmailFactory(folder=inbox, subject=f"Subject {n}", body=f"Body number {n}.") for n in range(5)]


@pytest.mark.django_db(transaction=True)
def test_the_first_batch_of_a_process_still_loading_its_model_is_not_failed_by_the_deadline(
    fresh_process, local_with_short_deadline, pending_mail
):
    """Item 4's deadline rule: the load (longer than the deadline) is waited for outside it."""
    loads = fresh_process(Loads(load_seconds=SLOW))

    result = embed_pending()

    assert (result.embedded, result.stopped_by) == (len(pending_mail), "")
    assert loads.count == 1
    record = read_health(EMBEDDING_ROLE)
    assert record.consecutive_failures == 0 and record.last_failure_kind is None


@pytest.mark.django_db(transaction=True)
def test_a_batch_that_itself_runs_past_the_deadline_still_fails(
    fresh_process, local_with_short_deadline, pending_mail
):
    """The deadline still holds for the call: loaded at once, but each call is slow."""
    fresh_process(Loads(load_seconds=0.0, call_seconds=SLOW))
    get_embedder().ensure_loaded()

    result = embed_pending()

    assert (result.embedded, result.stopped_by) == (0, "provider")
    assert read_health(EMBEDDING_ROLE).last_failure_kind == TIMEOUT


def test_concurrent_first_callers_and_the_warm_up_share_one_load(fresh_process):
    loads = fresh_process(Loads(load_seconds=0.5))
    embedder = ResilientEmbedder(
        LocalEmbedder(USE_MODEL),
        Resilience(
            EMBEDDING_ROLE, deadline=30, max_retries=0, concurrency=16, circuit_failures=5, circuit_seconds=60
        ),
    )
    vectors: list[list[float]] = []
    failures: list[BaseException] = []

    def search() -> None:
        try:
            vectors.append(embedder.embed_query("when does the train leave"))
        except BaseException as error:  # collected, asserted below
            failures.append(error)

    embedder.warm()  # what a server does as it starts
    callers = [threading.Thread(target=search) for _ in range(8)]
    callers.append(threading.Thread(target=embedder.ensure_loaded))
    for caller in callers:
        caller.start()
    for caller in callers:
        caller.join(timeout=30)

    assert failures == []
    assert len(vectors) == 8 and all(len(vector) == 512 for vector in vectors)
    assert loads.count == 1 and embedder.loaded


def test_a_load_longer_than_its_own_bound_fails_as_a_timeout_and_is_recorded(fresh_process, monkeypatch):
    fresh_process(Loads(load_seconds=1.0))
    monkeypatch.setattr(local_module, "LOAD_SECONDS", 0.2)
    embedder = ResilientEmbedder(
        LocalEmbedder(USE_MODEL),
        Resilience(
            EMBEDDING_ROLE, deadline=5, max_retries=0, concurrency=4, circuit_failures=5, circuit_seconds=60
        ),
    )

    with pytest.raises(ProviderError) as raised:
        embedder.embed_passages(["a passage"])

    assert raised.value.kind == TIMEOUT
    assert read_health(EMBEDDING_ROLE).last_failure_kind == TIMEOUT


def test_warming_at_start_loads_the_model_only_when_switched_on(fresh_process, settings):
    loads = fresh_process(Loads(load_seconds=0.1))
    configure(settings, embedding_provider="local", embedding_warm_start=False)
    warm_embedder(wait=True)
    assert loads.count == 0 and not get_embedder().loaded

    configure(settings, embedding_provider="local", embedding_warm_start=True)
    warm_embedder(wait=True)
    assert loads.count == 1 and get_embedder().loaded


def test_nothing_is_warmed_without_an_embedding_provider(fresh_process, settings):
    loads = fresh_process(Loads(load_seconds=0.1))
    configure(settings, embedding_provider="none", embedding_warm_start=True)
    warm_embedder(wait=True)
    assert loads.count == 0


def _worker(*queues: str) -> SimpleNamespace:
    """What the worker_init signal's sender offers the handler: the queues it consumes."""
    amqp = SimpleNamespace(queues=SimpleNamespace(consume_from=queues))
    return SimpleNamespace(app=SimpleNamespace(amqp=amqp))


def test_a_worker_loads_the_model_before_its_pool_starts_the_push_worker_does_not(fresh_process, settings):
    loads = fresh_process(Loads(load_seconds=0.1))
    configure(settings, embedding_provider="local", embedding_warm_start=True)

    celery_module.warm_embedder(sender=_worker("push"))
    assert loads.count == 0

    celery_module.warm_embedder(sender=_worker("celery"))
    assert loads.count == 1 and get_embedder().loaded


def test_the_web_server_completes_its_startup_only_once_the_model_is_loaded(fresh_process, settings):
    from mailfathom import asgi

    fresh_process(Loads(load_seconds=1.0))
    configure(settings, embedding_provider="local", embedding_warm_start=True)
    warm_embedder(wait=False)  # as importing mailfathom.asgi does
    events = [{"type": "lifespan.startup"}, {"type": "lifespan.shutdown"}]
    sent: list[tuple[str, bool]] = []

    async def receive() -> dict[str, str]:
        return events.pop(0)

    async def send(message: dict[str, str]) -> None:
        sent.append((message["type"], get_embedder().loaded))

    asyncio.run(asgi.application({"type": "lifespan"}, receive, send))

    assert sent[0] == ("lifespan.startup.complete", True)


def test_a_child_forked_while_the_parent_loads_loads_on_its_own(fresh_process):
    """The parent's loading thread does not exist in the child: the child must not wait for it."""
    fresh_process(Loads(load_seconds=1.0))
    LocalEmbedder(USE_MODEL).warm()
    context = multiprocessing.get_context("fork")
    results = context.Queue()

    def child() -> None:
        embedder = LocalEmbedder(USE_MODEL)
        embedder.ensure_loaded()
        results.put(len(embedder.embed_query("Rechnung")))

    process = context.Process(target=child)
    process.start()
    dimensions = results.get(timeout=60)
    process.join(timeout=30)
    assert dimensions == 512

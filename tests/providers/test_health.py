"""The shared health record: states, transitions, what it stores, and Redis being away."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from mailfathom.core.capability import CapabilityState
from mailfathom.providers import ProviderError, get_embedder, health
from mailfathom.providers.health import RECORD_FIELDS, read_health
from tests.providers.openai_server import status

ROOT = Path(__file__).resolve().parents[2]
SECRET = "Kündigung zum 31. März, Konto DE44 5001 0517 5407 3249 31"


def test_available_then_degraded_then_available_again(resilient_openai, openai_server):
    embedder = resilient_openai(max_retries=0)
    assert read_health("embedding").state == CapabilityState.AVAILABLE  # never called yet
    embedder.embed_query(SECRET)
    record = read_health("embedding")
    assert (record.state, record.consecutive_failures) == (CapabilityState.AVAILABLE, 0)
    assert record.last_success_at is not None and record.last_failure_at is None

    openai_server.embeddings.script(status(401), status(500))
    for _ in range(2):
        with pytest.raises(ProviderError):
            embedder.embed_query(SECRET)
    record = read_health("embedding")
    assert (record.state, record.last_failure_kind) == (CapabilityState.DEGRADED, "unavailable")
    assert record.consecutive_failures == 2

    embedder.embed_query(SECRET)  # recovery needs only the next success
    record = read_health("embedding")
    assert (record.state, record.consecutive_failures) == (CapabilityState.AVAILABLE, 0)
    assert record.last_failure_kind == "unavailable"  # history kept, state recovered
    assert record.last_success_at > record.last_failure_at


def test_the_record_holds_no_text(resilient_openai, openai_server):
    embedder = resilient_openai(max_retries=0)
    embedder.embed_passages([SECRET])
    openai_server.embeddings.script(status(400, message=SECRET))
    with pytest.raises(ProviderError):
        embedder.embed_passages([SECRET])
    stored = health._redis().hgetall(health.health_key("embedding"))
    assert {key.decode() for key in stored} == set(RECORD_FIELDS)
    dump = repr(stored)
    assert "Kündigung" not in dump and "DE44" not in dump and "K\\xc3\\xbcndigung" not in dump


def test_inactive_when_no_provider_is_configured(mailfathom_settings):
    mailfathom_settings(embedding_provider="none")
    assert get_embedder() is None
    health.record_failure("embedding", "timeout")
    assert read_health("embedding").state == CapabilityState.INACTIVE


def test_the_record_is_shared_with_other_processes(resilient_openai, openai_server, settings):
    openai_server.embeddings.script(status(401))
    with pytest.raises(ProviderError):
        resilient_openai().embed_query("x")
    code = (
        "import django; django.setup(); from django.conf import settings; "
        f"settings.PROVIDER_HEALTH_NAMESPACE = {settings.PROVIDER_HEALTH_NAMESPACE!r}; "
        "from mailfathom.providers.health import read_health; r = read_health('embedding'); "
        "print(r.state, r.last_failure_kind)"
    )
    result = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        env={**os.environ, "DJANGO_SETTINGS_MODULE": "mailfathom.test_settings"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.stdout.split() == ["degraded", "credential_refused"], result.stderr[-2000:]


def test_redis_being_away_neither_breaks_a_call_nor_the_reading(resilient_openai, openai_server, settings):
    embedder = resilient_openai(max_retries=0)
    settings.REDIS_URL = "unix:///nonexistent/redis.sock"
    assert len(embedder.embed_query("x")) == openai_server.dimensions
    openai_server.embeddings.script(status(401))
    with pytest.raises(ProviderError):
        embedder.embed_query("x")
    record = read_health("embedding")  # falls back to what this process saw
    assert (record.state, record.last_failure_kind) == (CapabilityState.DEGRADED, "credential_refused")

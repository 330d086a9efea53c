"""Fixtures for provider tests: the scripted OpenAI-compatible server, settings, health isolation."""

from __future__ import annotations

import uuid

import pytest

from mailfathom.providers import health
from mailfathom.providers.openai_compat import OpenAIEmbedder
from mailfathom.providers.resilience import Resilience, ResilientEmbedder
from tests.providers.openai_server import ScriptedOpenAIServer


@pytest.fixture
def openai_server():
    with ScriptedOpenAIServer(dimensions=384) as server:
        yield server


@pytest.fixture(autouse=True)
def _isolated_health(settings):
    """Give each test its own health records in the real Redis, and remove them afterwards."""
    settings.PROVIDER_HEALTH_NAMESPACE = f"test-providers-{uuid.uuid4().hex}"
    yield
    for role in ("embedding", "chat"):
        health.clear_health(role)


@pytest.fixture
def resilient_openai(openai_server):
    """Build a ResilientEmbedder on the scripted server with a budget chosen by the test."""

    def build(
        *,
        model="multilingual-e5-small",
        deadline=5.0,
        max_retries=2,
        concurrency=4,
        circuit_failures=5,
        circuit_seconds=60.0,
        **tuning,
    ):
        backend = OpenAIEmbedder(
            model=model, dimensions=384, base_url=openai_server.base_url, api_key="test-key"
        )
        tuning.setdefault("backoff_base", 0.01)
        resilience = Resilience(
            "embedding",
            deadline=deadline,
            max_retries=max_retries,
            concurrency=concurrency,
            circuit_failures=circuit_failures,
            circuit_seconds=circuit_seconds,
            **tuning,
        )
        return ResilientEmbedder(backend, resilience)

    return build

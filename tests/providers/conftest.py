"""Fixtures for provider tests: the scripted OpenAI-compatible server, settings, health isolation."""

from __future__ import annotations

import pytest

from mailfathom.providers.openai_compat import OpenAIEmbedder
from mailfathom.providers.resilience import Resilience, ResilientEmbedder


@pytest.fixture
def openai_server(scripted):
    """The scripted server under the name provider tests use for it."""
    return scripted


@pytest.fixture(autouse=True)
def _own_health(own_provider_health):
    """Every provider test records provider health, so every one keeps its records apart."""


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
            model=model,
            dimensions=openai_server.dimensions,
            base_url=openai_server.base_url,
            api_key="test-key",
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

"""get_embedder from the MAILFATHOM_EMBEDDING_* settings, and the provider error codes."""

from __future__ import annotations

import pickle

import pytest

from mailfathom.core import config
from mailfathom.core.errors import MailFathomError, published
from mailfathom.providers import (
    EmbeddingProfileSpec,
    ProviderError,
    embedding_configuration_problems,
    get_embedder,
    provider_code,
)
from mailfathom.providers.errors import KINDS


def test_defaults_embed_locally_with_the_bundled_model():
    values = config.load({}).values
    assert values.embedding_provider == "local"
    assert values.embedding_model == "universal-sentence-encoder-multilingual-3"
    assert values.embedding_dimensions == 512
    assert (values.embedding_timeout_seconds, values.embedding_max_retries) == (10, 2)
    assert values.embedding_concurrency == 4
    assert values.embedding_circuit_failures == 5
    assert values.embedding_circuit_seconds == 60


def test_an_unknown_provider_is_a_problem_naming_the_setting():
    loaded = config.load({"MAILFATHOM_EMBEDDING_PROVIDER": "magic"})
    assert "one of local, openai, none" in loaded.problems["MAILFATHOM_EMBEDDING_PROVIDER"]


def test_get_embedder_builds_the_local_one_once_per_process(mailfathom_settings):
    mailfathom_settings(embedding_provider="local")
    first = get_embedder()
    assert first is get_embedder()
    assert first.profile == EmbeddingProfileSpec("local", "universal-sentence-encoder-multilingual-3", 512)
    mailfathom_settings(embedding_max_retries=1)  # any change of the settings forgets it
    assert get_embedder() is not first


def test_a_forked_process_builds_its_own(mailfathom_settings, monkeypatch):
    mailfathom_settings(embedding_provider="local")
    parent = get_embedder()
    monkeypatch.setattr("mailfathom.providers.os.getpid", lambda: -1)
    assert get_embedder() is not parent


def test_get_embedder_reads_every_openai_setting(mailfathom_settings, openai_server):
    mailfathom_settings(
        embedding_provider="openai",
        embedding_base_url=openai_server.base_url,
        embedding_model="nomic-embed-text",
        embedding_api_key="sk-test",
        embedding_timeout_seconds=7,
        embedding_max_retries=3,
        embedding_concurrency=2,
        embedding_circuit_failures=9,
        embedding_circuit_seconds=30,
        embedding_dimensions=openai_server.dimensions,
    )
    embedder = get_embedder()
    assert embedder.profile == EmbeddingProfileSpec("openai", "nomic-embed-text", openai_server.dimensions)
    budget = embedder.resilience
    assert (budget.deadline, budget.max_retries, budget.limit.limit) == (7, 3, 2)
    assert (budget.circuit.failures, budget.circuit.open_seconds) == (9, 30)
    embedder.embed_query("x")
    request = openai_server.requests[0]
    assert (request.model, request.authorization, request.inputs) == (
        "nomic-embed-text",
        "Bearer sk-test",
        ["x"],
    )


def test_openai_configuration_problems():
    values = config.load({}).values.replace(
        embedding_provider="openai", embedding_model=" ", embedding_base_url="localhost:11434"
    )
    problems = embedding_configuration_problems(values)
    assert [p.split()[0] for p in problems] == ["MAILFATHOM_EMBEDDING_MODEL", "MAILFATHOM_EMBEDDING_BASE_URL"]
    assert embedding_configuration_problems(values.replace(embedding_provider="none")) == []


@pytest.mark.parametrize(
    ("kind", "code"),
    [
        ("credential_refused", 71001),
        ("timeout", 72001),
        ("rate_limited", 72001),
        ("unavailable", 72001),
        ("circuit_open", 72001),
        ("overloaded", 72001),
        ("bad_response", 73001),
        ("model_mismatch", 73001),
    ],
)
def test_each_kind_maps_to_one_spec_code_and_is_never_published(kind, code):
    error = ProviderError(kind, False, role="chat")
    assert provider_code(error) == error.code == code
    assert isinstance(error, MailFathomError) and not error.is_published
    assert published(error).code == 54001
    assert "chat provider" in error.message


def test_the_kind_list_is_complete_and_closed():
    assert len(KINDS) == 8
    with pytest.raises(ValueError):
        ProviderError("mystery", True)


def test_a_provider_error_survives_pickling():
    original = ProviderError("rate_limited", True, retry_after=2.5, status=429)
    error = pickle.loads(pickle.dumps(original))  # noqa: S301 (our own bytes)
    assert (error.kind, error.transient, error.retry_after, error.status, error.code) == (
        "rate_limited",
        True,
        2.5,
        429,
        72001,
    )

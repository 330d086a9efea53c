"""The Embedder contract, run against every backend and bundled model as callers get it
(through get_embedder)."""

from __future__ import annotations

import pytest

from mailfathom.providers import EMBEDDING_BACKENDS, EmbeddingProfileSpec, get_embedder
from mailfathom.providers.base import is_e5_model
from mailfathom.providers.local import MODELS
from mailfathom.providers.resilience import ResilientEmbedder

CASES = [("local", model) for model in MODELS] + [
    ("openai", "multilingual-e5-small"),
    ("openai", "text-embedding-3-small"),
]


def test_every_backend_is_covered():
    assert {provider for provider, _ in CASES} == set(EMBEDDING_BACKENDS)


@pytest.fixture(params=CASES, ids=["/".join(case) for case in CASES])
def embedder(request, mailfathom_settings, openai_server):
    provider, model = request.param
    if provider == "openai":
        mailfathom_settings(
            embedding_provider="openai",
            embedding_base_url=openai_server.base_url,
            embedding_api_key="k",
            embedding_model=model,
            embedding_dimensions=openai_server.dimensions,
        )
    else:
        mailfathom_settings(
            embedding_provider=provider, embedding_model=model, embedding_dimensions=MODELS[model].dimensions
        )
    built = get_embedder()
    assert built is not None
    return built


def embed_all(embedder, texts):
    """Embed `texts` in batches of max_batch, as callers must."""
    size = embedder.max_batch
    return [v for i in range(0, len(texts), size) for v in embedder.embed_passages(texts[i : i + size])]


class TestEmbedderContract:
    def test_is_wrapped_in_resilience(self, embedder):
        assert isinstance(embedder, ResilientEmbedder)

    def test_profile_describes_the_vectors(self, embedder):
        profile = embedder.profile
        assert isinstance(profile, EmbeddingProfileSpec)
        vectors = embedder.embed_passages(["Quarterly report attached.", "Lunch on Friday?"])
        assert [len(v) for v in vectors] == [profile.dimensions] * 2
        assert all(isinstance(x, float) for x in vectors[0])

    def test_one_vector_per_text_in_order(self, embedder):
        texts = ["The invoice is overdue.", "Meeting moved to Tuesday.", "The invoice is overdue."]
        vectors = embed_all(embedder, texts)
        assert len(vectors) == 3
        assert vectors[0] == pytest.approx(vectors[2], abs=1e-6)
        assert vectors[0] != pytest.approx(vectors[1], abs=1e-3)
        alone = embedder.embed_passages(["Meeting moved to Tuesday."])[0]
        assert alone == pytest.approx(vectors[1], abs=1e-4)

    def test_query_and_passage_differ_exactly_for_an_asymmetric_model(self, embedder):
        """e5 models place "query: " and "passage: " text apart; the others embed both alike."""
        text = "Where is the signed contract?"
        query, passage = embedder.embed_query(text), embedder.embed_passages([text])[0]
        if is_e5_model(embedder.profile.model):
            assert query != pytest.approx(passage, abs=1e-3)
        else:
            assert query == pytest.approx(passage, abs=1e-5)

    def test_empty_list_needs_no_call(self, embedder):
        assert embedder.embed_passages([]) == []

    def test_more_than_max_batch_is_refused_before_any_work(self, embedder):
        assert embedder.max_batch >= 1
        with pytest.raises(ValueError, match="at most"):
            embedder.embed_passages(["x"] * (embedder.max_batch + 1))

    def test_broken_mail_text_is_embedded(self, embedder):
        """A NUL byte and a lone surrogate (a lenient decode of broken mail) do not break a call."""
        vectors = embed_all(embedder, ["before\x00after", "bad \udcff byte", ""])
        assert len(vectors) == 3
        assert len(embedder.embed_query("\udcff")) == embedder.profile.dimensions

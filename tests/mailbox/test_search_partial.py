"""Hybrid search while embedding is partial, and results no query word matched held back as padding.

The provider is the real `openai` client against the scripted server (hash-derived unit
vectors: unrelated texts are nearly orthogonal, so their cosine similarity is near 0).
"""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from mailbox.services import search
from mailbox.services.embedding import VectorHit, embed_pending
from mailbox.services.lexical_search import LexicalHit, refresh_term_stats
from mailbox.services.search import Fusion, fuse, search_emails
from tests.configure import configure, scripted_embeddings
from tests.mailbox.factories import EmailFactory

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("own_provider_health")]


def test_semantic_search_is_partial_while_little_of_the_scope_is_embedded(settings, scripted, inbox):
    configure(settings, **scripted_embeddings(scripted, embedding_max_retries=0))
    for n in range(4):
        EmailFactory(folder=inbox, subject=f"Quarterly report {n}", body="figures for the quarter")
    embed_pending(max_batches=1, batch_size=1)
    refresh_term_stats()
    search.forget_coverage()

    partial = search_emails("quarterly figures")

    assert (partial.retrieval_mode, partial.semantic_search) == ("hybrid", "partial")
    coverage = partial.embedding_coverage
    assert (coverage.embedded_emails, coverage.emails_in_scope) == (1, 4)
    assert len(partial.matches) == 4  # the mail not embedded yet is still found by its words

    embed_pending()
    search.forget_coverage()
    complete = search_emails("quarterly figures")
    assert complete.semantic_search == "available"
    assert complete.embedding_coverage.embedded_emails == 4


def test_results_no_word_matched_are_held_back_below_the_similarity_floor(
    settings, scripted, inbox, monkeypatch
):
    configure(settings, **scripted_embeddings(scripted, embedding_max_retries=0))
    EmailFactory(folder=inbox, subject="Quarterly report", body="figures for the quarter")
    for n in range(6):
        EmailFactory(folder=inbox, subject=f"Recipe {n}", body="Mix flour, sugar and eggs, then bake.")
    embed_pending()
    refresh_term_stats()

    monkeypatch.setitem(search.MIN_SIMILARITY, "text-embed", -1.0)  # every vector result may pad
    padded = search_emails("quarterly")
    assert {m.match_kind for m in padded.matches} == {"exact", "semantic"}
    assert len(padded.matches) == 7

    monkeypatch.setitem(search.MIN_SIMILARITY, "text-embed", 0.5)  # none of them is near enough
    held = search_emails("quarterly")
    assert [(m.summary.subject, m.match_kind) for m in held.matches] == [("Quarterly report", "exact")]
    assert held.retrieval_mode == "hybrid"


def _lexical(*ids: str) -> list[LexicalHit]:
    return [LexicalHit(email_id=email_id, score=10.0 - n, exact=True) for n, email_id in enumerate(ids)]


def _vector(*pairs: tuple[str, float]) -> list[VectorHit]:
    return [VectorHit(email_id=email_id, distance=1.0 - similarity) for email_id, similarity in pairs]


RECEIVED = {name: datetime(2026, 1, n + 1, tzinfo=UTC) for n, name in enumerate("abcdefgh")}


def test_fusion_keeps_close_vector_results_and_counts_the_held_back():
    fused = fuse(
        _lexical("a"),
        _vector(("a", 0.9), ("b", 0.8), ("c", 0.1)),
        RECEIVED,
        10,
        Fusion(min_similarity=0.5),
    )
    assert [(email_id, kind) for email_id, _, kind in fused.ranked] == [("a", "exact"), ("b", "semantic")]
    assert fused.held_back == 1


def test_fusion_pads_with_nothing_once_the_words_matched_enough_emails():
    fused = fuse(
        _lexical("a", "b", "c"),
        _vector(("d", 0.99), ("a", 0.9)),
        RECEIVED,
        10,
        Fusion(min_similarity=0.0, enough_lexical=3),
    )
    assert [email_id for email_id, _, _ in fused.ranked] == ["a", "b", "c"]
    assert fused.held_back == 1


def test_a_lexical_match_is_never_held_back_however_far_it_is():
    fused = fuse(_lexical("a", "b"), _vector(("b", -0.5)), RECEIVED, 10, Fusion(min_similarity=0.9))
    # The order is the fusion method's business (by rank, b's vector rank 1 lifts it); the
    # floor must not drop b.
    assert sorted((email_id, kind) for email_id, _, kind in fused.ranked) == [("a", "exact"), ("b", "exact")]
    assert fused.held_back == 0


@pytest.mark.parametrize("method", ["rrf", "scores"])
def test_both_fusion_methods_let_a_strong_vector_match_lift_a_lexical_one(method):
    fused = fuse(
        _lexical("a", "b"),
        _vector(("b", 0.9), ("a", 0.1)),
        RECEIVED,
        10,
        Fusion(method=method, vector_weight=1.0),
    )
    assert [email_id for email_id, _, _ in fused.ranked] == ["b", "a"]


def test_the_default_model_has_a_similarity_floor():
    # The floor is keyed by the model name a profile records; a key no bundled model
    # carries would silently hold nothing back.
    from mailfathom.providers import local

    assert set(search.MIN_SIMILARITY) <= set(local.MODELS)
    assert Fusion.for_model(local.DEFAULT_MODEL).min_similarity > search.NO_FLOOR

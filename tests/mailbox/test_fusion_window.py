"""window_candidates: the mail a hybrid search reads for quoting, chosen before received times are known."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from hypothesis import given
from hypothesis import strategies as st

from mailbox.services.embedding import VectorHit
from mailbox.services.lexical_search import LexicalHit
from mailbox.services.search import Fusion, fuse, window_candidates

EMAILS = [f"e{n}" for n in range(30)]
BASE = datetime(2024, 1, 1, tzinfo=UTC)


def _values(values, count: int):
    return st.lists(values, min_size=count, max_size=count)


@st.composite
def rankings(draw):
    """Two rankings over few emails, so that both overlap, and received times with ties."""
    lexical_ids = draw(st.lists(st.sampled_from(EMAILS), unique=True, max_size=25))
    vector_ids = draw(st.lists(st.sampled_from(EMAILS), unique=True, max_size=25))
    scores = sorted(draw(_values(st.floats(0.1, 10.0), len(lexical_ids))), reverse=True)
    lexical = [LexicalHit(email_id, score, True) for email_id, score in zip(lexical_ids, scores, strict=True)]
    distances = sorted(draw(_values(st.floats(0.0, 1.0), len(vector_ids))))
    semantic = [VectorHit(email_id, away) for email_id, away in zip(vector_ids, distances, strict=True)]
    hours = draw(st.lists(st.integers(0, 3), min_size=len(EMAILS), max_size=len(EMAILS)))
    received = {email_id: BASE + timedelta(hours=hour) for email_id, hour in zip(EMAILS, hours, strict=True)}
    fusion = Fusion(
        min_similarity=draw(st.sampled_from([-1.0, 0.5])),
        kept_lexical=draw(st.integers(0, 3)),
        kept_place=draw(st.integers(1, 12)),
        method=draw(st.sampled_from(["rrf", "scores"])),
    )
    return lexical, semantic, received, fusion


@given(rankings(), st.integers(1, 12))
def test_the_fusions_first_places_are_among_the_window_candidates(drawn, window):
    lexical, semantic, received, fusion = drawn
    first = [email_id for email_id, _, _ in fuse(lexical, semantic, received, window, fusion).ranked]
    assert set(first) <= window_candidates(lexical, semantic, fusion, window)


def test_the_candidates_are_few_when_the_scores_do_not_tie():
    lexical = [LexicalHit(f"e{n}", 10.0 - n, exact=True) for n in range(20)]
    assert window_candidates(lexical, [], Fusion(), 10) == {f"e{n}" for n in range(10)}

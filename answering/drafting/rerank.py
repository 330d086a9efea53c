"""Stage 5, rerank: the relevance pass over the gathered sources, when switched on.

With MAILFATHOM_DRAFTING_RERANK_ENABLED the utility model judges each source (ask_mail's
relevance judgement) and sources below the threshold are dropped; a failed pass keeps the
fused order. Reference documents join only while reranking is on, and the kept sources are
ordered best first, so fit's drops from the bottom take what scored worst.
"""

from __future__ import annotations

from collections.abc import Sequence

from answering.drafting.spend import MeteredModel
from answering.lookup import Lookup
from answering.relevance import RelevanceOutcome, RelevanceSettings, filter_passages
from mailbox.services.passages import Passage
from mailfathom.core.config import UTILITY_ROLE

STAGE = "rerank"


def rerank(
    model: MeteredModel,
    condensed: str,
    retrieval_mode: str,
    passages: Sequence[Passage],
    settings: RelevanceSettings,
) -> RelevanceOutcome:
    """The relevance pass over `passages` (tokens are booked by `model` itself)."""
    return filter_passages(
        model,
        Lookup(query_text=condensed),
        retrieval_mode,
        passages,
        settings,
        may_spend=lambda: True,
        charge=lambda tokens: None,
        role=UTILITY_ROLE,
    )


def best_judged(outcome: RelevanceOutcome, threshold: int) -> list[Passage]:
    """The kept passages by score, best first; an unjudged one counts as the threshold."""
    kept = list(outcome.passages)
    return sorted(kept, key=lambda passage: -outcome.scores.get(passage.stored_email_id, threshold))

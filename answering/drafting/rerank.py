"""Stage 5, rerank: the relevance pass over the gathered sources, when switched on.

With MAILFATHOM_DRAFTING_RERANK_ENABLED, each source is judged by the utility model (one
call per source, the same judgement ask_mail's relevance pass makes: answering.relevance)
against the condensed query, and sources below MAILFATHOM_CHAT_RELEVANCE_FILTER_THRESHOLD
are dropped; a pass that fails keeps the fused order. Off, the fused ranking is handed on
as hybrid search produced it. Either way fit drops sources from the bottom of this order,
so what goes first is what ranked worst.

Reference documents (price lists, policies, FAQs an operator uploads per account) are
searched only while reranking is on (answering.drafting.references) and judged here beside
the mail; the kept sources are then ordered by their score, best first, so fit drops what
was scored worst.
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

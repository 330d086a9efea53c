"""Stage 5, rerank: the relevance pass over the gathered sources, when switched on.

With MAILFATHOM_DRAFTING_RERANK_ENABLED, each source is judged by the utility model (one
call per source, the same judgement ask_mail's relevance pass makes: answering.relevance)
against the condensed query, and sources below MAILFATHOM_CHAT_RELEVANCE_FILTER_THRESHOLD
are dropped; a pass that fails keeps the fused order. Off, the fused ranking is handed on
as hybrid search produced it. Either way fit drops sources from the bottom of this order,
so what goes first is what ranked worst.

Reference documents (price lists, policies, FAQs an operator uploads per account) would be
queried here, and only while reranking is on; they are not built yet
(docs/operations/drafting.md, rerank).
"""

from __future__ import annotations

from collections.abc import Sequence

from answering.drafting.spend import MeteredModel
from answering.lookup import Lookup
from answering.relevance import RelevanceOutcome, RelevanceSettings, filter_passages
from mailbox.services.passages import Passage
from mailfathom.config import UTILITY_ROLE

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

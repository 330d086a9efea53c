"""The optional second pass: each candidate judged alone by the chat model, 0 to 100.

Off by default (MAILFATHOM_CHAT_RELEVANCE_FILTER_ENABLED). Candidates are judged one after
another, since the chat bulkhead rejects rather than queues. It filters and never reorders,
and every failure keeps the passage: a judgement that cannot be had stops the pass keeping
the rest, an unreadable one keeps that candidate (docs/operations/answering.md, The relevance
pass). A judgement sees the lookup and one candidate only, nothing of the run.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from answering.envelope import write_envelope, write_query
from answering.instructions import RELEVANCE_INSTRUCTION
from answering.lookup import Lookup
from mailbox.services.passages import Passage
from mailfathom.providers.chat import CHAT_ROLE, ChatMessage, ChatModel
from mailfathom.providers.errors import BAD_RESPONSE, ProviderError
from mailfathom.providers.health import read_health

logger = logging.getLogger(__name__)

# ASCII digits only, no sign, no leading zero: "042", "４２" and "٤٢" are not bare scores.
_SCORE = re.compile(r"\s*(100|[1-9][0-9]|[0-9])\s*", re.ASCII)

PROVIDER_UNAVAILABLE = "provider_unavailable"
JUDGEMENT_FAILED = "judgement_failed"
NOT_A_SCORE = "not_a_score"
ALLOWANCE_SPENT = "allowance_spent"


@dataclass(frozen=True)
class RelevanceSettings:
    threshold: int
    max_candidates: int


@dataclass(frozen=True)
class RelevanceOutcome:
    passages: tuple[Passage, ...]
    judged: int
    dropped: int
    failure: str | None  # one of the classifications above, or None
    # stored_email_id -> score of each judged passage (for ordering); not part of equality.
    scores: dict[str, int] = field(default_factory=dict, compare=False)


def strict_score(text: str) -> int | None:
    """The score a reply states, or None: only a bare whole number from 0 to 100 counts."""
    match = _SCORE.fullmatch(text)
    return None if match is None else int(match.group(1))


def judgement_messages(lookup: Lookup, retrieval_mode: str, passage: Passage) -> list[ChatMessage]:
    """The one user turn of a judgement: the lookup, then the candidate in its envelope."""
    content = (
        write_query(lookup.query_text, lookup.published_filters())
        + "\n"
        + write_envelope(retrieval_mode, [passage])
    )
    return [ChatMessage(role="user", content=content)]


def filter_passages(
    chat: ChatModel,
    lookup: Lookup,
    retrieval_mode: str,
    passages: Sequence[Passage],
    config: RelevanceSettings,
    *,
    may_spend: Callable[[], bool],
    charge: Callable[[int], None],
    role: str = CHAT_ROLE,
) -> RelevanceOutcome:
    """Judge up to `config.max_candidates` passages in order; see the module docstring.

    `may_spend()` says whether the run may make another call (its token allowance);
    `charge(tokens)` books what a judgement reported; `role` is the provider role `chat`
    serves (its health decides whether the pass is attempted at all).
    """
    if not passages:
        return RelevanceOutcome((), 0, 0, None)
    if read_health(role, configured=True).consecutive_failures > 0:
        return _logged(RelevanceOutcome(tuple(passages), 0, 0, PROVIDER_UNAVAILABLE))
    kept: list[Passage] = []
    scores: dict[str, int] = {}
    judged = dropped = 0
    failure: str | None = None
    for position, passage in enumerate(passages):
        if position >= config.max_candidates:
            kept.extend(passages[position:])
            break
        if not may_spend():
            failure = ALLOWANCE_SPENT
            kept.extend(passages[position:])
            break
        try:
            reply = chat.complete(RELEVANCE_INSTRUCTION, judgement_messages(lookup, retrieval_mode, passage))
        except ProviderError as error:
            if error.kind == BAD_RESPONSE and error.status is None:
                # It answered, with nothing usable (malformed, empty): not a score. A status
                # (400, 422) is the endpoint refusing the request, which stops the pass.
                failure = failure or NOT_A_SCORE
                kept.append(passage)
                continue
            failure = JUDGEMENT_FAILED
            kept.extend(passages[position:])
            break
        charge(reply.total_tokens)
        score = strict_score(reply.text) if not reply.tool_calls else None
        if score is None:
            failure = failure or NOT_A_SCORE
            kept.append(passage)
            continue
        judged += 1
        scores[passage.stored_email_id] = score
        if score >= config.threshold:
            kept.append(passage)
        else:
            dropped += 1
    return _logged(RelevanceOutcome(tuple(kept), judged, dropped, failure, scores))


def _logged(outcome: RelevanceOutcome) -> RelevanceOutcome:
    logger.info(
        "relevance pass: judged=%d dropped=%d kept=%d failure=%s",
        outcome.judged,
        outcome.dropped,
        len(outcome.passages),
        outcome.failure or "none",
    )
    return outcome

"""search_emails: one bounded window of matches ranked by relevance, with highlighted extracts.

Lexical ranking always runs. When an embedding profile is active and the query can be
placed in its space, the query is embedded and the two rankings are fused by reciprocal
rank fusion (hybrid); a provider that fails makes this call lexical and the state degraded,
and the next successful call recovers on its own. There is no cursor: a relevance order
moves as mail is indexed. The query text is never logged.

A selection whose folders leave nothing to read (an alias that matches nothing, a hidden
folder, junk not asked for, no served account) is an ordinary empty result, as for
list_emails: nothing is queried and no query is embedded (docs/search.md).
"""

from __future__ import annotations

import logging
import re
import threading
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import cast

from mailbox.models import Email, EmailQuerySet
from mailbox.services import embedding
from mailbox.services.bounds import bounded_text, whole_number
from mailbox.services.embedding import VectorHit
from mailbox.services.freshness import FolderFreshness, folder_freshness
from mailbox.services.lexical_search import (
    LexicalHit,
    collection_read_once,
    highlight,
    highlight_attachments,
    rank_lexical,
)
from mailbox.services.mail_filter import MailFilter
from mailbox.services.raw_sql import selects_nothing
from mailbox.services.reranking import (
    Facts,
    Reranking,
    author_words,
    facts_and_quoting,
    facts_of_rows,
    quoting_window,
    rerank,
    row_facts,
    with_quoting,
)
from mailbox.services.selection import Selection, select
from mailbox.services.summaries import EmailSummary, summarize, with_summary_columns
from mailfathom.core.capability import SEMANTIC_PARTIAL as PARTIAL
from mailfathom.core.config import MAX_LEXICAL_QUERY_CHARACTERS
from mailfathom.core.errors import Code, MailFathomError
from mailfathom.core.resettable import forgotten_when_changed
from mailfathom.core.text import is_whole_address
from mailfathom.core.wire import WireModel
from mailfathom.providers import get_embedder
from mailfathom.providers.errors import ProviderError
from mailfathom.providers.local import E5_MODEL, USE_MODEL

logger = logging.getLogger(__name__)

MAX_QUERY_CHARACTERS = 512
# An author address can be no longer than a stored sender address.
MAX_ADDRESS_CHARACTERS = cast(int, Email._meta.get_field("sender_address").max_length)  # a CharField: set
MIN_RESULT_LIMIT, MAX_RESULT_LIMIT, DEFAULT_RESULT_LIMIT = 1, 50, 20
RESULT_LIMIT_OUT_OF_RANGE = Code.RESULT_LIMIT_OUT_OF_RANGE
EXTRACTS_PER_EMAIL = 3
CHARACTERS_PER_EXTRACT = 240
# Attachments named per match: an email rarely carries more that hold the words, and each
# costs extracts the window has to carry.
MAX_ATTACHMENT_MATCHES = 3
# Each ranking contributes this many candidates to the fusion. How they combine was
# chosen by 5-fold cross-validation on the corpus's reply pairs with the default embedder
# over each email's own words (bench/retrieval.py; docs/benchmarks.md): weighted
# reciprocal rank fusion, k 3 (the first places count most), a vector rank weighing 0.4 of
# a lexical one, chosen by MRR together with the reranking factors and thread support
# (mailbox.services.reranking).
# "scores" fuses each ranking's own scores scaled to 0..1 instead.
FUSION_DEPTH = 100
RRF_K = 3
LEXICAL_WEIGHT = 1.0
VECTOR_WEIGHT = 0.4
FUSION_METHOD = "rrf"
# A result the vector ranking found but no query word matched ("semantic") is a hit only
# if it is close enough to the query: at least this cosine similarity under the model that
# embedded it (similarities of unrelated text differ by model), and never when the query
# matched at least ENOUGH_LEXICAL emails by their words, which can fill the window with
# better-founded results. Held-back results are not returned (docs/search.md, "Padding").
# Both chosen with the fusion (the floor for the default model; e5 was not measured with
# this rule and has none).
NO_FLOOR = -1.0  # the least cosine similarity there is: a model without a floor holds nothing back
MIN_SIMILARITY = {USE_MODEL: 0.297, E5_MODEL: NO_FLOOR}
ENOUGH_LEXICAL = 10
# The lexical ranking's first KEPT_LEXICAL hits are never fused below place KEPT_PLACE: a
# strong match by words is not pushed out of the window by the vector ranking's neighbours.
KEPT_LEXICAL = 0
KEPT_PLACE = 10
# A lexical-only search reads at least this many matches, so that reranking (author,
# thread, junk and bulk) has mail to bring up when it moves some down.
LEXICAL_RERANK_DEPTH = 40
# Below this share of the scope embedded, semanticSearch says "partial": the vector ranking
# sees only the embedded mail.
PARTIAL_BELOW = 0.95
# The lexical arm may be given its own text (a whole email to find its neighbours by its
# words): control characters are read as spaces and the text is read up to
# MAX_LEXICAL_QUERY_CHARACTERS, declared in mailfathom.core.config beside the drafting setting it bounds.


# The large columns a match's summary never reads (its extracts are read apart), left out
# of the window's rows (docs/benchmarks.md has what they cost).
NOT_SUMMARIZED = (
    "text_body",
    "participants_text",
    "attachment_text",
    "search_vector",
    "thread_keys",
    "references",
    "parse_defects",
)


class AttachmentMatch(WireModel):
    """A query word found in the text extracted from one attachment of the matched email."""

    attachment_index: int  # its place in get_email_content's attachments, from 0
    file_name: str | None  # None: the part carried no usable name
    snippets: list[str]


class SearchMatch(WireModel):
    summary: EmailSummary
    relevance_rank: float
    snippets: list[str]
    match_kind: str  # "exact", "stemmed" or "semantic"
    attachment_matches: list[AttachmentMatch]
    # The conversation the email belongs to (mailbox.services.threads); matches sharing it
    # are one thread's messages. None only for mail stored before threading existed.
    thread_id: str | None


class EmbeddingCoverage(WireModel):
    embedded_emails: int
    emails_in_scope: int


class SearchResult(WireModel):
    matches: list[SearchMatch]
    retrieval_mode: str  # "lexical" or "hybrid"
    semantic_search: str  # "inactive", "available", "partial" or "degraded"
    included_junk_mail: bool
    folder_freshness: list[FolderFreshness]
    embedding_coverage: EmbeddingCoverage | None


def checked_query(query_text: object) -> str:
    """`query_text` if a search accepts it, else 51002 naming queryText."""
    return bounded_text(query_text, maximum=MAX_QUERY_CHARACTERS, argument="queryText")


def checked_author(author_address: object) -> str | None:
    """`author_address` trimmed and case-folded if it is one whole email address, else 51002."""
    if author_address is None:
        return None
    text = author_address.strip() if isinstance(author_address, str) else ""
    if not is_whole_address(text, MAX_ADDRESS_CHARACTERS):
        raise MailFathomError(
            Code.FILTER_REFUSED,
            "The authorAddress argument must be one whole email address.",
            argument="authorAddress",
        )
    return text.casefold()


_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def lexical_text(lexical_query_text: object, query: str) -> str:
    """The text the lexical arm ranks by: `lexical_query_text` read as words, else the query.

    It is not a caller's argument but a use case's (drafting searches for mail like a whole
    email): control characters count as spaces, and only the first
    MAX_LEXICAL_QUERY_CHARACTERS are read; the ranking keeps its most informative words.
    """
    if lexical_query_text is None:
        return query
    if not isinstance(lexical_query_text, str):
        raise TypeError("lexical_query_text must be text")
    text = _CONTROL.sub(" ", lexical_query_text[:MAX_LEXICAL_QUERY_CHARACTERS])
    return text if text.strip() else query


@collection_read_once()
def search_emails(
    query_text: str,
    accounts: Iterable[str] | None = None,
    folders: Iterable[str] | None = None,
    mail_filter: MailFilter | None = None,
    result_limit: int | None = None,
    author_address: str | None = None,
    *,
    lexical_query_text: str | None = None,
) -> SearchResult:
    """Search the caller's scope; see the module docstring for modes and states.

    `author_address` names whoever wrote the query text (a reply whose parent is sought):
    their own name and address are then no evidence, and their own mail ranks lower.
    `lexical_query_text`, when given, is what the lexical arm ranks by (and extracts mark),
    while `query_text` alone is embedded for the vector arm; absent, both use `query_text`.
    """
    query = checked_query(query_text)
    author = checked_author(author_address)
    words = lexical_text(lexical_query_text, query)
    limit = whole_number(
        result_limit,
        minimum=MIN_RESULT_LIMIT,
        maximum=MAX_RESULT_LIMIT,
        default=DEFAULT_RESULT_LIMIT,
        code=RESULT_LIMIT_OUT_OF_RANGE,
        argument="resultLimit",
    )
    selection = select(accounts, folders, mail_filter)
    candidates = Email.objects.in_selection(selection)
    ranked, mode, state = rank(
        candidates,
        query,
        limit,
        lexical_query=words,
        author_address=author,
        junk_possible=selection.filter.include_junk,
    )
    shown_rows = with_summary_columns(
        Email.objects.filter(id__in=[email_id for email_id, _, _ in ranked]).defer(*NOT_SUMMARIZED)
    )
    emails = {str(e.id): e for e in shown_rows}
    ordered = [emails[email_id] for email_id, _, _ in ranked if email_id in emails]
    summaries = {summary.stored_email_id: summary for summary in summarize(ordered)}
    shown = [str(e.id) for e in ordered]
    extracts = highlight(shown, words, EXTRACTS_PER_EMAIL, CHARACTERS_PER_EXTRACT)
    in_files = highlight_attachments(shown, words, EXTRACTS_PER_EMAIL, CHARACTERS_PER_EXTRACT)
    matches = [
        SearchMatch(
            summary=summaries[email_id],
            relevance_rank=score,
            snippets=extracts.get(email_id, [])[:EXTRACTS_PER_EMAIL],
            match_kind=kind,
            attachment_matches=[
                AttachmentMatch(
                    attachment_index=found.position,
                    file_name=found.file_name or None,
                    snippets=found.extracts[:EXTRACTS_PER_EMAIL],
                )
                for found in in_files.get(email_id, [])[:MAX_ATTACHMENT_MATCHES]
            ],
            thread_id=str(emails[email_id].thread_id) if emails[email_id].thread_id else None,
        )
        for email_id, score, kind in ranked
        if email_id in summaries
    ]
    coverage = None
    if state != embedding.INACTIVE:
        embedded, total = (0, 0) if selects_nothing(candidates) else _coverage(selection, candidates)
        coverage = EmbeddingCoverage(embedded_emails=embedded, emails_in_scope=total)
        state = reported_state(state, embedded, total)
    return SearchResult(
        matches=matches,
        retrieval_mode=mode,
        semantic_search=state,
        included_junk_mail=selection.filter.include_junk,
        folder_freshness=folder_freshness(selection),
        embedding_coverage=coverage,
    )


# Counting a large scope is costly (docs/benchmarks.md), and the figure only says how far
# the sweep has got: one count per scope is reused for this long.
COVERAGE_SECONDS = 30.0
_coverage_cache: dict[tuple[str, int | None], tuple[float, tuple[int, int]]] = {}
_coverage_lock = threading.Lock()


def _coverage(selection: Selection, candidates: EmailQuerySet) -> tuple[int, int]:
    profile = embedding.active_profile()
    key = (selection.fingerprint(), profile.pk if profile else None)
    now = time.monotonic()
    with _coverage_lock:
        cached = _coverage_cache.get(key)
    if cached is not None and now - cached[0] < COVERAGE_SECONDS:
        return cached[1]
    counts = embedding.coverage(candidates)
    with _coverage_lock:
        if len(_coverage_cache) > 1000:
            _coverage_cache.clear()
        _coverage_cache[key] = (now, counts)
    return counts


def reported_state(state: str, embedded: int, total: int) -> str:
    """semanticSearch: "partial" instead of "available" while too little of the scope is embedded."""
    if state == embedding.AVAILABLE and total and embedded < PARTIAL_BELOW * total:
        return PARTIAL
    return state


@forgotten_when_changed("MAILFATHOM", "DATABASES")
def forget_coverage() -> None:
    """Drop every cached coverage count (another configuration or database counts afresh)."""
    with _coverage_lock:
        _coverage_cache.clear()


def rank(
    candidates: EmailQuerySet,
    query: str,
    limit: int,
    *,
    lexical_query: str | None = None,
    author_address: str | None = None,
    junk_possible: bool = True,
) -> tuple[list[tuple[str, float, str]], str, str]:
    """Rank `candidates` for `query`: [(email id, score, match kind)], mode, semantic state.

    The lexical arm ranks by `lexical_query` when given (else `query`); only `query` is
    embedded. `author_address` is whoever wrote the query text, if known: their name and
    address count for nothing, and their own mail ranks lower (mailbox.services.reranking).
    `junk_possible` False says the candidates hold no junk folder (the selection left junk
    out), so no folder role is read for reranking.
    Candidates empty by construction rank nothing without a query: the mode is the one a
    search would have had with a working provider, since none was asked.
    """
    profile = embedding.active_profile()
    state = embedding.semantic_state(profile)
    if selects_nothing(candidates):
        return [], ("hybrid" if state == embedding.AVAILABLE else "lexical"), state
    words = query if lexical_query is None else lexical_query
    authors = author_words(candidates, author_address)
    if state == embedding.INACTIVE:
        # Lexical only: the hits' own rows come with them, for reranking without a second query.
        rows = row_facts(limit, words, roles=junk_possible)
        lexical = rank_lexical(candidates, words, lexical_depth(limit), author_words=authors, row_facts=rows)
        reranked = _lexical_only(candidates, lexical, limit, author_address, words, junk_possible)
        return reranked, "lexical", state
    lexical = rank_lexical(candidates, words, FUSION_DEPTH, author_words=authors)
    embedder = get_embedder()
    try:
        # A degraded provider is still asked: its circuit fails fast while open, and the
        # next call that succeeds is what restores hybrid search.
        vector = embedder.embed_query(query) if embedder and embedding.profile_matches(profile) else None
    except ProviderError as error:
        logger.info("search: query embedding failed (%s); answering lexically", error.kind)
        vector = None
    if vector is None or profile is None:
        degraded = _lexical_only(candidates, lexical, limit, author_address, words, junk_possible)
        return degraded, "lexical", embedding.DEGRADED
    semantic = embedding.rank_vector(candidates, vector, profile, FUSION_DEPTH)
    ids = {hit.email_id for hit in lexical} | {hit.email_id for hit in semantic}
    fusion = Fusion.for_model(profile.model)
    readable = (  # else no body is read for quoting
        window_candidates(lexical, semantic, fusion, quoting_window(limit))
        if fusion.reranking.quoting_factor < 1.0
        else set()
    )
    # One query: received times, what reranking needs, and the quoting of the window's mail.
    facts, quoted = facts_and_quoting(candidates, ids, words, readable, roles=junk_possible)
    received = {email_id: fact.received_at for email_id, fact in facts.items()}
    fused = fuse(
        lexical, semantic, received, limit, fusion, facts=facts, author=author_address, quoting_ids=quoted
    )
    return fused.ranked, "hybrid", embedding.AVAILABLE


def lexical_depth(limit: int) -> int:
    """How many lexical matches a lexical-only search reads to rerank its window of `limit`."""
    return min(FUSION_DEPTH, max(limit, LEXICAL_RERANK_DEPTH))


def _lexical_only(
    candidates: EmailQuerySet,
    lexical: list[LexicalHit],
    limit: int,
    author_address: str | None,
    words: str,
    junk_possible: bool = True,
) -> list[tuple[str, float, str]]:
    order = [(hit.email_id, hit.score) for hit in lexical]
    reranking = Reranking()
    if lexical and all(hit.row is not None for hit in lexical):
        facts = facts_of_rows(lexical, words)
    else:  # ranked for a fusion whose provider then failed: read as the fusion reads them
        window = quoting_window(limit)
        readable = [email_id for email_id, _ in order[:window]] if reranking.quoting_factor < 1.0 else []
        hits = [hit.email_id for hit in lexical]
        facts, quoted = facts_and_quoting(candidates, hits, words, readable, roles=junk_possible)
        facts = with_quoting(facts, order, quoted, window)
    kinds = {hit.email_id: "exact" if hit.exact else "stemmed" for hit in lexical}
    order = rerank(order, facts, author_address, reranking)
    return [(email_id, score, kinds[email_id]) for email_id, score in order[:limit]]


@dataclass(frozen=True)
class Fusion:
    """How the two rankings combine (weighted reciprocal rank fusion) and what may pad them."""

    k: float = RRF_K
    lexical_weight: float = LEXICAL_WEIGHT
    vector_weight: float = VECTOR_WEIGHT
    min_similarity: float = NO_FLOOR
    enough_lexical: int = ENOUGH_LEXICAL
    # "rrf": by rank (k, weights); "scores": by each ranking's own scores scaled to 0..1
    # (BM25 over the best BM25, cosine similarity over the ranking's range), weighted.
    method: str = FUSION_METHOD
    # The lexical ranking's first `kept_lexical` hits rank no lower than place `kept_place`.
    kept_lexical: int = KEPT_LEXICAL
    kept_place: int = KEPT_PLACE
    reranking: Reranking = Reranking()

    @classmethod
    def for_model(cls, model: str) -> Fusion:
        return cls(min_similarity=MIN_SIMILARITY.get(model, NO_FLOOR))


@dataclass(frozen=True)
class Fused:
    ranked: list[tuple[str, float, str]]  # (email id, score, match kind), best first
    held_back: int  # results of the vector ranking alone that were not close enough to be hits


def fuse(
    lexical: list[LexicalHit],
    semantic: list[VectorHit],
    received: dict[str, datetime],
    limit: int,
    fusion: Fusion | None = None,
    *,
    facts: dict[str, Facts] | None = None,
    author: str | None = None,
    quoting_ids: set[str] | None = None,
) -> Fused:
    """Weighted reciprocal rank fusion of the two rankings; ties go to the newest received.

    A result only the vector ranking found is kept only while it is close enough to the
    query and the query's words did not match enough emails on their own (Fusion). The
    lexical ranking's first hits keep a place near the top (Fusion.kept_lexical). With
    `facts`, the order is then reranked by author, thread, junk and bulk, and those of
    `quoting_ids` among the first quoting_window(limit) places as quoting the query
    (mailbox.services.reranking). `received` maps every email id of both rankings to its
    received time.
    """
    fusion = fusion or Fusion()
    scores, kinds, held_back = fused_scores(lexical, semantic, fusion)
    present = [email_id for email_id in scores if email_id in received]
    order = sorted(present, key=lambda email_id: (-scores[email_id], -received[email_id].timestamp()))
    _keep_lexical(order, scores, [hit.email_id for hit in lexical[: fusion.kept_lexical]], fusion.kept_place)
    ranked = [(email_id, scores[email_id]) for email_id in order]
    if facts is not None:
        facts = with_quoting(facts, ranked, quoting_ids or set(), quoting_window(limit))
        ranked = rerank(ranked, facts, author, fusion.reranking)
    return Fused(
        ranked=[(email_id, score, kinds[email_id]) for email_id, score in ranked[:limit]],
        held_back=held_back,
    )


def window_candidates(
    lexical: Sequence[LexicalHit], semantic: Sequence[VectorHit], fusion: Fusion, window: int
) -> set[str]:
    """Every email that can take one of the first `window` places of `fuse`'s order before
    reranking: received times (read after this) only break ties, so those scoring at least
    the window-th best fused score, and the lexical hits kept near the top."""
    scores, _kinds, _held_back = fused_scores(lexical, semantic, fusion)
    kept = {hit.email_id for hit in lexical[: fusion.kept_lexical]}
    if len(scores) <= window:
        return set(scores) | kept
    threshold = sorted(scores.values(), reverse=True)[window - 1]
    return {email_id for email_id, score in scores.items() if score >= threshold} | kept


def _keep_lexical(order: list[str], scores: dict[str, float], kept: list[str], place: int) -> None:
    """Move each of `kept` found below `place` up to it, raising its score to that place's."""
    for email_id in kept:
        if email_id not in scores or place < 1 or len(order) <= place:
            continue
        at = order.index(email_id)
        if at < place:
            continue
        order.pop(at)
        order.insert(place - 1, email_id)
        below = order[place] if place < len(order) else None
        scores[email_id] = max(scores[email_id], scores[below] if below else 0.0)


def fused_scores(
    lexical: Sequence[LexicalHit], semantic: Sequence[VectorHit], fusion: Fusion
) -> tuple[dict[str, float], dict[str, str], int]:
    """Each result's fused score and match kind, and how many vector-only results were held back.

    The one weighted fusion of a lexical and a vector ranking: `fuse` orders mail by it, and
    drafting's reference search (answering.drafting.references) orders reference chunks by it.
    """
    by_scores = fusion.method == "scores"
    best = max((hit.score for hit in lexical), default=1.0) or 1.0
    similarities = [1.0 - hit.distance for hit in semantic]
    low = min(similarities, default=0.0)
    span = (max(similarities, default=0.0) - low) or 1.0
    scores: dict[str, float] = {}
    kinds: dict[str, str] = {}
    for position, hit in enumerate(lexical, start=1):
        share = hit.score / best if by_scores else 1.0 / (fusion.k + position)
        scores[hit.email_id] = scores.get(hit.email_id, 0.0) + fusion.lexical_weight * share
        kinds[hit.email_id] = "exact" if hit.exact else "stemmed"
    padding_allowed = len(lexical) < fusion.enough_lexical
    held_back = 0
    for position, near in enumerate(semantic, start=1):
        similarity = 1.0 - near.distance
        if near.email_id not in kinds and (not padding_allowed or similarity < fusion.min_similarity):
            held_back += 1
            continue
        share = (similarity - low) / span if by_scores else 1.0 / (fusion.k + position)
        scores[near.email_id] = scores.get(near.email_id, 0.0) + fusion.vector_weight * share
        kinds.setdefault(near.email_id, "semantic")
    return scores, kinds, held_back

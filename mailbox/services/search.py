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
import threading
import time
from collections.abc import Iterable

from mailbox.models import Email
from mailbox.services import embedding
from mailbox.services.bounds import bounded_text, whole_number
from mailbox.services.freshness import FolderFreshness, folder_freshness
from mailbox.services.lexical_search import highlight, rank_lexical
from mailbox.services.raw_sql import selects_nothing
from mailbox.services.selection import MailFilter, Selection, select
from mailbox.services.summaries import EmailSummary, summarize
from mailfathom.providers import get_embedder
from mailfathom.providers.errors import ProviderError
from mailfathom.resettable import forgotten_when_changed
from mailfathom.wire import WireModel

logger = logging.getLogger(__name__)

MAX_QUERY_CHARACTERS = 512
MIN_RESULT_LIMIT, MAX_RESULT_LIMIT, DEFAULT_RESULT_LIMIT = 1, 50, 20
RESULT_LIMIT_OUT_OF_RANGE = 51003
EXTRACTS_PER_EMAIL = 3
CHARACTERS_PER_EXTRACT = 240
# Each ranking contributes this many candidates to the fusion. The constant and weights
# were chosen by 5-fold cross-validation on the corpus's reply pairs with the default
# embedder (USE v3 over each email's own words; docs/benchmarks.md): k 10 and a vector
# weight of 0.7 were chosen in four folds of five (0.8 in the fifth). The vector ranking
# is still the weaker signal, and a small k lets the top of each ranking decide.
FUSION_DEPTH = 100
RRF_K = 10
LEXICAL_WEIGHT = 1.0
VECTOR_WEIGHT = 0.7


class SearchMatch(WireModel):
    summary: EmailSummary
    relevance_rank: float
    snippets: list[str]
    match_kind: str  # "exact", "stemmed" or "semantic"


class EmbeddingCoverage(WireModel):
    embedded_emails: int
    emails_in_scope: int


class SearchResult(WireModel):
    matches: list[SearchMatch]
    retrieval_mode: str  # "lexical" or "hybrid"
    semantic_search: str  # "inactive", "available" or "degraded"
    included_junk_mail: bool
    folder_freshness: list[FolderFreshness]
    embedding_coverage: EmbeddingCoverage | None


def checked_query(query_text: object) -> str:
    """`query_text` if a search accepts it, else 51002 naming queryText."""
    return bounded_text(query_text, maximum=MAX_QUERY_CHARACTERS, argument="queryText")


def search_emails(
    query_text: str,
    accounts: Iterable[str] | None = None,
    folders: Iterable[str] | None = None,
    mail_filter: MailFilter | None = None,
    result_limit: int | None = None,
) -> SearchResult:
    """Search the caller's scope; see the module docstring for modes and states."""
    query = checked_query(query_text)
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
    ranked, mode, state = rank(candidates, query, limit)
    emails = {str(e.id): e for e in Email.objects.filter(id__in=[email_id for email_id, _, _ in ranked])}
    ordered = [emails[email_id] for email_id, _, _ in ranked if email_id in emails]
    summaries = {summary.stored_email_id: summary for summary in summarize(ordered)}
    extracts = highlight([str(e.id) for e in ordered], query, EXTRACTS_PER_EMAIL, CHARACTERS_PER_EXTRACT)
    matches = [
        SearchMatch(
            summary=summaries[email_id],
            relevance_rank=score,
            snippets=extracts.get(email_id, [])[:EXTRACTS_PER_EMAIL],
            match_kind=kind,
        )
        for email_id, score, kind in ranked
        if email_id in summaries
    ]
    coverage = None
    if state != embedding.INACTIVE:
        embedded, total = (0, 0) if selects_nothing(candidates) else _coverage(selection, candidates)
        coverage = EmbeddingCoverage(embedded_emails=embedded, emails_in_scope=total)
    return SearchResult(
        matches=matches,
        retrieval_mode=mode,
        semantic_search=state,
        included_junk_mail=selection.filter.include_junk,
        folder_freshness=folder_freshness(selection),
        embedding_coverage=coverage,
    )


# Counting a large scope costs about 100 ms at 100,000 emails (bench/search.py), and the
# figure only says how far the sweep has got: one count per scope is reused for this long.
COVERAGE_SECONDS = 30.0
_coverage_cache: dict[tuple[str, int | None], tuple[float, tuple[int, int]]] = {}
_coverage_lock = threading.Lock()


def _coverage(selection: Selection, candidates) -> tuple[int, int]:
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


@forgotten_when_changed("MAILFATHOM", "DATABASES")
def forget_coverage() -> None:
    """Drop every cached coverage count (another configuration or database counts afresh)."""
    with _coverage_lock:
        _coverage_cache.clear()


def rank(candidates, query: str, limit: int) -> tuple[list[tuple[str, float, str]], str, str]:
    """Rank `candidates` for `query`: [(email id, score, match kind)], mode, semantic state.

    Candidates empty by construction rank nothing without a query: the mode is the one a
    search would have had with a working provider, since none was asked.
    """
    state = embedding.semantic_state()
    if selects_nothing(candidates):
        return [], ("hybrid" if state == embedding.AVAILABLE else "lexical"), state
    lexical = rank_lexical(candidates, query, FUSION_DEPTH if state != embedding.INACTIVE else limit)
    if state == embedding.INACTIVE:
        return (
            [(hit.email_id, hit.score, "exact" if hit.exact else "stemmed") for hit in lexical[:limit]],
            ("lexical"),
            state,
        )
    profile = embedding.active_profile()
    embedder = get_embedder()
    try:
        # A degraded provider is still asked: its circuit fails fast while open, and the
        # next call that succeeds is what restores hybrid search.
        vector = embedder.embed_query(query) if embedder and embedding.profile_matches() else None
    except ProviderError as error:
        logger.info("search: query embedding failed (%s); answering lexically", error.kind)
        vector = None
    if vector is None or profile is None:
        lexical_only = [
            (hit.email_id, hit.score, "exact" if hit.exact else "stemmed") for hit in lexical[:limit]
        ]
        return lexical_only, "lexical", embedding.DEGRADED
    semantic = embedding.rank_vector(candidates, vector, profile, FUSION_DEPTH)
    return fuse(lexical, semantic, candidates, limit), "hybrid", embedding.AVAILABLE


def fuse(lexical, semantic, candidates, limit: int) -> list[tuple[str, float, str]]:
    """Weighted reciprocal rank fusion of the two rankings; ties go to the newest received."""
    scores: dict[str, float] = {}
    kinds: dict[str, str] = {}
    for position, hit in enumerate(lexical, start=1):
        scores[hit.email_id] = scores.get(hit.email_id, 0.0) + LEXICAL_WEIGHT / (RRF_K + position)
        kinds[hit.email_id] = "exact" if hit.exact else "stemmed"
    for position, hit in enumerate(semantic, start=1):
        scores[hit.email_id] = scores.get(hit.email_id, 0.0) + VECTOR_WEIGHT / (RRF_K + position)
        kinds.setdefault(hit.email_id, "semantic")
    received = dict(
        (str(email_id), moment)
        for email_id, moment in candidates.filter(id__in=list(scores)).values_list("id", "received_at")
    )
    order = sorted(scores, key=lambda email_id: (-scores[email_id], -received[email_id].timestamp()))
    return [(email_id, scores[email_id], kinds[email_id]) for email_id in order[:limit]]

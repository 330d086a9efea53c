"""What a fused ranking learns from the candidates' own rows: author, thread, junk, bulk, quoting.

The fused scores say how well each email's words and meaning fit the query. Facts of the
emails themselves then reorder it (docs/search.md, "Author, threads, junk and bulk"): an
email sent by the query's own author is not the mail the text answers, nor is one that
quotes the text (it answers it); junk and bulk mail (not mailing-list discussion) come
after correspondence, still reachable further down. Then the conversation counts: an email
whose thread has another match near the top gains a share of that match's score, so the
message asked for rises with its best-matching sibling instead of being crowded out by it.
Each factor was chosen by cross-validation on the reply pairs (bench/retrieval.py;
docs/benchmarks.md).
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime

from django.db import connection
from django.db.models import Case, F, TextField, Value, When
from django.db.models.expressions import Expression
from django.db.models.functions import Left

from accounts.models import FolderRole
from mailbox.models import Email, EmailQuerySet, Participant
from mailbox.services.lexical_search import HitRow, LexicalHit, RowFacts
from mailbox.services.own_words import quoted_part
from mailbox.services.raw_sql import Params

# A fused score is multiplied by these (1.0 leaves it as it was).
AUTHOR_FACTOR = 0.6  # an email the query's own author sent
# An email gains this share of the best score another email of its thread has among the
# first SUPPORT_FROM places (after the factors): the conversation of a strong match is
# likely the one asked about, and the message asked for is often not its best match.
THREAD_SUPPORT = 0.5
SUPPORT_FROM = 20
BULK_FACTOR = 0.5  # junk-folder mail, and bulk mail that is not list discussion
# An email that quotes the query's words (it answers the text, so it is not what the text
# answers), told by QUOTED_RUN-word runs of a query of at least QUOTING_FROM words, at
# least QUOTED_RUNS of them, looked for among the first QUOTING_WINDOW places only: the
# depth the factor was cross-validated at (bench/retrieval.py ranks 10), and what keeps
# the bodies a ranking reads for it few.
QUOTING_FACTOR = 0.5
QUOTING_WINDOW = 10
# These four were set, not cross-validated (the factor was, with them as they are).
QUOTING_FROM = 8
QUOTED_RUN = 5
QUOTED_RUNS = 2
QUOTING_READ = 4000  # characters of each body read for it
# Display names of the author read from stored mail: enough for a person's few spellings.
AUTHOR_NAMES = 20


@dataclass(frozen=True)
class Facts:
    """What reranking reads of one candidate email."""

    received_at: datetime
    sender_address: str
    thread_id: str | None
    unwanted: bool  # in a junk folder, or bulk and not list mail
    quotes_query: bool = False  # its quoted part holds the query's own run of words (quoting)


@dataclass(frozen=True)
class Reranking:
    """The factors one ranking is reordered by (module docstring)."""

    author_factor: float = AUTHOR_FACTOR
    thread_support: float = THREAD_SUPPORT
    support_from: int = SUPPORT_FROM
    bulk_factor: float = BULK_FACTOR
    quoting_factor: float = QUOTING_FACTOR


# What candidate_facts reads, in HitRow's order after the id (then the folder's role).
_FACT_COLUMNS = ("id", "received_at", "sender_address", "thread_id", "is_bulk", "is_list_mail")


def quoting_window(limit: int) -> int:
    """How many first places of a ranking of `limit` are read for quoting the query."""
    return min(limit, QUOTING_WINDOW)


def candidate_facts(candidates: EmailQuerySet, ids: Iterable[str]) -> dict[str, Facts]:
    """Facts of the emails `ids` among `candidates`, in one query; an id not among them is absent.

    Whether an email quotes the query is not read here but by `quoting`, for the first few
    of a ranking only (with_quoting).
    """
    return facts_and_quoting(candidates, ids, "", ())[0]


def facts_and_quoting(
    candidates: EmailQuerySet,
    ids: Iterable[str],
    query: str,
    readable: Collection[str],
    *,
    roles: bool = True,
) -> tuple[dict[str, Facts], set[str]]:
    """candidate_facts of `ids`, and which of `readable` quote `query` (as `quoting` says),
    in one query: the bodies of `readable` only are read, and none when `query` is too
    short to be quoted. Facts leave quotes_query unset (with_quoting sets it). Without
    `roles` no folder role is read (candidates that hold no junk folder: RowFacts.roles)."""
    runs = _query_runs(query) if readable else set()
    body_start: Expression = Value("", output_field=TextField())
    if runs:
        read = When(id__in=list(readable), then=Left("text_body", QUOTING_READ))
        body_start = Case(read, default=body_start, output_field=TextField())
    folder_role: F | Value = F("folder__mapping__role") if roles else Value(None, output_field=TextField())
    rows = candidates.filter(id__in=list(ids)).annotate(role=folder_role, start=body_start)
    values = rows.values_list(*_FACT_COLUMNS, "role", "start")
    facts, quoted = {}, set()
    for email_id, received, sender, thread, bulk, listed, role, start in values:
        facts[str(email_id)] = _facts(HitRow(received, sender, thread, bulk, listed, role, ""), set())
        if start and _quotes(start, runs):
            quoted.add(str(email_id))
    return facts, quoted


def facts_of_rows(hits: Sequence[LexicalHit], query: str) -> dict[str, Facts]:
    """Facts of lexical hits ranked with their rows (rank_lexical's `row_facts`), quoting
    included for those whose body start was read: what candidate_facts and `quoting` give
    over the same window, without two more queries."""
    runs = _query_runs(query)
    facts = {}
    for hit in hits:
        assert hit.row is not None, "rank_lexical was not asked for the rows"
        facts[hit.email_id] = _facts(hit.row, runs)
    return facts


def _facts(row: HitRow, runs: set[str]) -> Facts:
    return Facts(
        received_at=row.received_at,
        sender_address=(row.sender_address or "").casefold(),
        thread_id=str(row.thread_id) if row.thread_id else None,
        unwanted=row.folder_role == FolderRole.JUNK or (row.is_bulk and not row.is_list_mail),
        quotes_query=bool(row.body_start) and bool(runs) and _quotes(row.body_start, runs),
    )


def row_facts(limit: int, query: str, *, roles: bool = True) -> RowFacts:
    """What rank_lexical reads with each hit for facts_of_rows, ranking a window of `limit`:
    quoting read for its quoting_window, or for none when `query` is too short to be quoted
    (no body is then read); folder roles as `roles` says (RowFacts.roles)."""
    quoted = QUOTING_FACTOR < 1.0 and bool(_query_runs(query))
    return RowFacts(
        body_window=quoting_window(limit) if quoted else 0, body_characters=QUOTING_READ, roles=roles
    )


def quoting(ids: Iterable[str], query: str) -> set[str]:
    """Those of `ids` whose quoted part (what own_words leaves out) holds runs of the query.

    A message quoting the query's words replies to them. A query shorter than
    QUOTING_FROM words quotes nothing (typed words recur everywhere).
    """
    runs = _query_runs(query)
    wanted = [str(email_id) for email_id in ids]
    if not runs or not wanted:
        return set()
    bodies = Email.objects.filter(id__in=wanted).annotate(start=Left("text_body", QUOTING_READ))
    return {str(email_id) for email_id, body in bodies.values_list("id", "start") if _quotes(body, runs)}


def _quotes(body: str, runs: set[str]) -> bool:
    # The words joined by single spaces, so a substring test is a test of whole words.
    quoted = _joined(quoted_part(body))
    return sum(run in quoted for run in runs) >= QUOTED_RUNS


_WORD = re.compile(r"[^\W_]+")  # letters and digits, as str.isalnum


def _words(text: str) -> list[str]:
    return _WORD.findall(text.casefold())


def _joined(text: str) -> str:
    return " " + " ".join(_words(text)) + " "


def _query_runs(query: str) -> set[str]:
    """The runs a quotation of `query` is told by; none for a query too short to quote."""
    return _runs(query) if len(_words(query)) >= QUOTING_FROM else set()


def _runs(text: str) -> set[str]:
    """Each QUOTED_RUN words of `text` in a row, joined as _joined joins them."""
    words = _words(text)
    return {" " + " ".join(words[i : i + QUOTED_RUN]) + " " for i in range(len(words) - QUOTED_RUN + 1)}


def author_words(candidates: EmailQuerySet, address: str | None) -> frozenset[str]:
    """The words naming the person at `address`: its local part's and their display names' words.

    Names come from the stored mail (as a recipient, then as a sender), as the index splits
    them (`simple` parser, lowercased). No address, or one without `@`, names nobody.
    """
    if not address or "@" not in address:
        return frozenset()
    address = address.strip()
    local = address.rpartition("@")[0]
    names = list(
        Participant.objects.naming([address])
        .filter(email__in=candidates.values("id"))
        .exclude(display_name="")
        .values_list("display_name", flat=True)
        .distinct()[:AUTHOR_NAMES]
    )
    names += list(
        candidates.filter(sender_address__iexact=address)
        .exclude(sender_name="")
        .values_list("sender_name", flat=True)
        .distinct()[:AUTHOR_NAMES]
    )
    bind = Params()
    sql = f"SELECT DISTINCT lexeme FROM unnest(to_tsvector('simple', {bind(' '.join([local, *names]))}))"
    with connection.cursor() as cursor:
        cursor.execute(sql, bind.values)
        words = {row[0] for row in cursor.fetchall()}
    # The local part is read as words too ("jane.doe" gives "jane" and "doe").
    words |= {piece for piece in _words(local) if len(piece) > 1}
    return frozenset(words)


def with_quoting(
    facts: dict[str, Facts], order: Sequence[tuple[str, float]], quoting_ids: set[str], depth: int
) -> dict[str, Facts]:
    """`facts` with quotes_query set for those of `quoting_ids` among the first `depth` of `order`."""
    if not quoting_ids:
        return facts
    marked = {
        email_id: replace(facts[email_id], quotes_query=True)
        for email_id, _ in order[:depth]
        if email_id in quoting_ids and email_id in facts
    }
    return {**facts, **marked} if marked else facts


def rerank(
    order: Sequence[tuple[str, float]],
    facts: dict[str, Facts],
    author_address: str | None,
    reranking: Reranking,
) -> list[tuple[str, float]]:
    """`order` ([(email id, score)], best first) reordered by the factors, then by thread
    support (module docstring); ties keep `order`."""
    author = (author_address or "").strip().casefold()
    adjusted = []
    for place, (email_id, score) in enumerate(order):
        fact = facts.get(email_id)
        if fact is not None:
            if author and fact.sender_address == author:
                score *= reranking.author_factor
            if fact.unwanted:
                score *= reranking.bulk_factor
            if fact.quotes_query:
                score *= reranking.quoting_factor
        adjusted.append((score, place, email_id))
    adjusted.sort(key=lambda item: (-item[0], item[1]))
    if reranking.thread_support > 0:
        adjusted = _supported(adjusted, facts, reranking)
    return [(email_id, score) for score, _place, email_id in adjusted]


def _supported(
    adjusted: list[tuple[float, int, str]], facts: dict[str, Facts], reranking: Reranking
) -> list[tuple[float, int, str]]:
    """Each email's score plus thread_support times its thread's best other score near the top."""
    # The two best of each thread among the first places: an email's best other is the
    # first of them that is not itself.
    leaders: dict[str, list[tuple[float, str]]] = {}
    for score, _place, email_id in adjusted[: reranking.support_from]:
        thread = _thread(facts, email_id)
        if thread and len(leaders.setdefault(thread, [])) < 2:
            leaders[thread].append((score, email_id))
    supported = []
    for rank, (score, _place, email_id) in enumerate(adjusted):
        thread = _thread(facts, email_id)
        other = next((best for best, leader in leaders.get(thread or "", ()) if leader != email_id), 0.0)
        supported.append((score + reranking.thread_support * other, rank, email_id))
    supported.sort(key=lambda item: (-item[0], item[1]))
    return supported


def _thread(facts: dict[str, Facts], email_id: str) -> str | None:
    fact = facts.get(email_id)
    return fact.thread_id if fact is not None else None

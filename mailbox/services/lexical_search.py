"""Lexical ranking over Email.search_vector: candidates, ranks and highlighted extracts.

Ranking is BM25 computed from the index, one term per query word: a query word stands for
its family (mailbox.lexical: the indexed words sharing its own form or one of its English
or German stems), and each family scores its inverse document frequency once, saturated by
how often the message holds any of its words (a word in the subject or among the
participants counting more than one in the body, BM25F-style) and normalized by the
message's length against the collection's average. Words of a query joined by hyphens are
one query word ("follow-up"), not three. Families held by more than COMMON_WORD_SHARE of
all mail carry almost no evidence and are dropped, which also keeps the candidate set
small. Document frequencies and stems come from the LexicalTermStat snapshot (a word
missing from it counts as rare and stands only for itself).
"""

from __future__ import annotations

import math
import re
import threading
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any, NamedTuple

from django.db import connection, transaction

from accounts.models import FolderMapping
from mailbox.lexical import CONFIGURATION, INDEXED_ATTACHMENT_CHARACTERS, STEMMERS
from mailbox.models import (
    AttachmentText,
    Email,
    EmailQuerySet,
    Folder,
    LexicalCollectionStat,
    LexicalTermStat,
)
from mailbox.services import query_language
from mailbox.services.raw_sql import Params, column, cursor_under, selects_nothing, table
from mailbox.services.selection_size import selection_size

COMMON_WORD_SHARE = 0.2
MIN_COLLECTION_FOR_COMMON_WORDS = 50
MAX_QUERY_WORDS = 32
BM25_K1 = 1.2
BM25_B = 0.75
# How much one occurrence counts by field (BM25F): the subject and the participants say
# what a message is about and who it is between, so a match there counts more than one in
# the body. These, BM25_B and VARIANT_WEIGHT were chosen by 5-fold cross-validation on the
# reply pairs (bench/retrieval.py --lexical-grid; docs/benchmarks.md): 4 folds of 5.
SUBJECT_WEIGHT = 5.0
PARTICIPANTS_WEIGHT = 3.0
# An occurrence in the text extracted from an attachment counts this much of one in the
# body: a file is read by the same words, but a long document holds many words its cover
# note is not about. Not yet chosen by cross-validation (the dev pairs hold no attachment
# text); docs/search.md says so.
ATTACHMENT_WEIGHT = 0.5
# An occurrence of another word of the family ("payment" for "payments") counts this much
# of one of the query word itself.
VARIANT_WEIGHT = 0.5
# A query word naming the query's own author (rank_lexical's author_words) is left out of
# the query altogether (chosen with the fusion by cross-validation), not only counted for
# nothing among the participants.
AUTHOR_WORDS_LEFT_OUT = True
# Until the first snapshot measures it: a typical length in characters of an indexed email.
DEFAULT_AVERAGE_LENGTH = 2000.0
# Occurrences counted at most per word: a message repeating a word hundreds of times is no
# more about it than one repeating it fifty times.
MAX_OCCURRENCES = 50
# Messages stage 1 hands to the BM25 stage (at least five times the depth asked for): fewer
# cost recall on the reply pairs (bench/retrieval.py; docs/benchmarks.md).
PRESELECT = 300
PRESELECT_PER_RESULT = 5
# Postings (word, message pairs) stage 1 may read to choose candidates: the rarest query
# words whose document counts fit. Long pasted queries otherwise read every posting of
# 32 words, which is most of a large mailbox. This budget was chosen by bench/search.py at
# 100,000 emails, and budgets scaled to the reply pairs' corpus ranked alike
# (docs/benchmarks.md).
POSTING_BUDGET = 5_000
# Document counts are the whole mailbox's, but stage 1 reads only the selection's postings:
# a selection of at most SCOPE_COUNTED_WITHIN emails (counted up to that, and remembered for
# a minute) has each word's postings estimated as its share of the mailbox, so one small
# account among many keeps as many generating words as it would alone, where the whole
# mailbox's counts left it one or two and cost it recall (docs/benchmarks.md, "Search at
# a million emails").
SCOPE_COUNTED_WITHIN = 20_000
# In a mailbox of at least LARGE_MAILBOX emails the ranking statement runs with work_mem
# raised to RANKING_WORK_MEM: a common word's bitmap from the GIN index then stays exact
# instead of lossy, so stage 1 rechecks only the rows that hold it rather than every row
# of every page the bitmap names (docs/benchmarks.md, "Search at a million emails").
LARGE_MAILBOX = 250_000
RANKING_WORK_MEM = "32MB"
# Decimal places a BM25 score keeps: far below any difference a word makes, far above the
# rounding of a float sum.
SCORE_DIGITS = 9
# Characters of each body ts_headline reads for extracts: its cost grows with the text,
# and an extract from far down a very long message rarely helps a reader choose it.
HIGHLIGHT_READ = 8000
# The same for each attachment whose text holds a query word: documents put what matters
# further in than a letter does, so more is read (a search reads this only for the
# attachments that match).
ATTACHMENT_HIGHLIGHT_READ = 30_000
# Below this many emails (by the planner's estimate) query_words counts them exactly.
ESTIMATE_FROM = 20_000
# Parts of a hyphenated compound the parser emits after the compound itself: the query
# keeps the compound as one word (the index holds both, so either form finds the mail).
_COMPOUND_PARTS = ("hword_part", "hword_asciipart", "hword_numpart")
# How a family member is related to its query word when it is the word as written.
FORM = "form"
# Whether an English or a German query (query_language) reaches other forms of its words
# through its own language's stemmer only, rather than both. Off: every fold of the
# cross-validation kept both (bench/retrieval_languages.py; a German question about
# English mail holds English names and terms, and English queries lost a little too).
STEM_BY_LANGUAGE = False


@dataclass(frozen=True)
class LexicalHit:
    email_id: str
    score: float
    exact: bool  # whether a query word matched as written, not only another word of its family
    in_attachment: bool = False  # whether some query word matched in the text of an attachment
    row: HitRow | None = None  # with rank_lexical's `row_facts`: the email's own columns


class HitRow(NamedTuple):
    """What rank_lexical's `row_facts` reads of a hit's email in the ranking statement itself."""

    received_at: datetime
    sender_address: str
    thread_id: uuid.UUID | None
    is_bulk: bool
    is_list_mail: bool
    folder_role: str | None  # the folder mapping's role (None for a folder not mapped)
    body_start: str  # the first body_characters of the body for the first body_window hits, else ""


@dataclass(frozen=True)
class RowFacts:
    """Ask rank_lexical for each hit's row (LexicalHit.row) and the first bodies' starts."""

    body_window: int = 0  # hits, best first, whose body start is read
    body_characters: int = 0
    # Whether the folder mapping's role is read (HitRow.folder_role): a selection that
    # leaves junk out holds no junk, so it need not join the folder and mapping for it.
    roles: bool = True


@dataclass(frozen=True)
class QueryWords:
    weights: dict[str, float]  # query word -> idf of its family, rarest first
    exact: frozenset[str]  # the query words as written
    documents: dict[str, int] | None = None  # query word -> messages holding its family (estimated)
    # query word -> the indexed words it stands for (itself included)
    forms: dict[str, tuple[str, ...]] = field(default_factory=dict)
    average_length: float = DEFAULT_AVERAGE_LENGTH  # of the collection's indexed emails, in characters
    language: str | None = None  # the query's language by its function words (query_language), if told
    function_words: frozenset[str] = frozenset()  # query words left out as that language's function words
    collection: int = 0  # emails the document counts were taken over (the whole mailbox)

    def postings(self) -> int:
        """Postings of every query word in the whole mailbox (as `documents` estimates them)."""
        documents = self.documents or {}
        return sum(documents.get(word, 1) for word in self.weights)

    def generating(self, budget: int, share: float = 1.0) -> list[str]:
        """The rarest words whose postings fit `budget` (at least one): they choose candidates.

        A message holding none of them holds only words common enough that it cannot
        outscore one holding a rare word by much, so it is not worth reading postings of
        thousands of messages to find it; every word still counts in the BM25 stage.
        `share` is the part of the mailbox the selection holds: each word's postings in it
        are estimated as that part of its document count.
        """
        documents = self.documents or {}
        chosen: list[str] = []
        spent = 0.0
        for word in self.weights:
            spent += documents.get(word, 1) * share
            if chosen and spent > budget:
                break
            chosen.append(word)
        return chosen

    def lexemes(self) -> list[str]:
        """Every indexed word some query word stands for, once each."""
        seen: dict[str, None] = {}
        for word in self.weights:
            for form in self.forms.get(word, (word,)):
                seen.setdefault(form, None)
        return list(seen)


def _analysed(
    query: str,
) -> tuple[dict[str, int], dict[str, dict[str, dict[str, int]]], dict[str, frozenset[str]]]:
    """The query's words (as the index holds them) with their counts, each one's family, and its languages.

    A family maps each way of relating words (its own form, or one of STEMMERS) to the
    indexed words so related to the query word, with their document counts in the
    snapshot; the languages are those the word is a stop word of (query_language). The
    parts the parser adds after a hyphenated word ("follow-up" is followed by "follow"
    and "up") are not query words of their own.
    """
    stat = table(LexicalTermStat)
    word, documents = column(LexicalTermStat, "word"), column(LexicalTermStat, "documents")
    english, german = column(LexicalTermStat, "english"), column(LexicalTermStat, "german")
    english_stem, german_stem = STEMMERS
    bind = Params()
    sql = f"""
        WITH tokens AS (
            SELECT lexeme AS word, positions FROM unnest(to_tsvector('{CONFIGURATION}', {bind(query)}))
        ),
        stems AS (
            SELECT word, positions, (ts_lexize('{english_stem}', word))[1] AS en,
                   (ts_lexize('{german_stem}', word))[1] AS de
            FROM tokens
        )
        SELECT s.word, s.positions, NULL, NULL, {query_language.stop_languages_sql("s.word")} FROM stems s
        UNION ALL
        SELECT s.word, NULL, t.{word}, t.{documents}, ARRAY['{FORM}']
        FROM stems s JOIN {stat} t ON t.{word} = s.word
        UNION ALL
        SELECT s.word, NULL, t.{word}, t.{documents}, ARRAY['{english_stem}']
        FROM stems s JOIN {stat} t ON t.{english} = s.en
        UNION ALL
        SELECT s.word, NULL, t.{word}, t.{documents}, ARRAY['{german_stem}']
        FROM stems s JOIN {stat} t ON t.{german} = s.de
    """
    with connection.cursor() as cursor:
        cursor.execute(sql, bind.values)
        rows = cursor.fetchall()
    positions = {query_word: list(at) for query_word, at, _, _, _ in rows if at is not None}
    languages = {query_word: frozenset(tags) for query_word, at, _, _, tags in rows if at is not None}
    counts = _without_compound_parts(positions)
    families: dict[str, dict[str, dict[str, int]]] = {query_word: {} for query_word in counts}
    for query_word, _, member, held, tags in rows:
        if member is not None and query_word in families:
            families[query_word].setdefault(tags[0], {})[member] = int(held)
    return counts, families, languages


def _without_compound_parts(positions: dict[str, list[int]]) -> dict[str, int]:
    """How often each word occurs in the query, not counting the parts after a hyphenated word."""
    at = {position: word for word, where in positions.items() for position in where}
    parts = set()
    for word, where in positions.items():
        pieces = [piece for piece in word.split("-") if piece] if "-" in word else []
        for position in where:
            for offset, piece in enumerate(pieces, start=1):
                if at.get(position + offset) == piece:
                    parts.add(position + offset)
    counts = {word: sum(position not in parts for position in where) for word, where in positions.items()}
    return {word: count for word, count in counts.items() if count}


def query_words(query: str) -> QueryWords:
    """The query's informative words, each with its family and the family's inverse document frequency.

    Query words whose families overlap ("payment" and "payments") are one word: together
    they count once, like an inflected word in the mail. The answer depends only on the
    text, the snapshot and the collection size, so it is kept for the next call with the
    same three (a search reads it for ranking and again for its extracts).
    """
    total, snapshot, average = _collection()
    key = (query, snapshot, total)
    with _words_lock:
        cached = _words_cache.get(key)
    if cached is not None:
        return cached
    words = _query_words(query, total, average)
    if snapshot is not None:
        with _words_lock:
            if len(_words_cache) >= _WORDS_CACHED:
                _words_cache.clear()
            _words_cache[key] = words
    return words


_WORDS_CACHED = 1000
_words_cache: dict[tuple[str, int | None, int], QueryWords] = {}
_words_lock = threading.Lock()


def _query_words(query: str, total: int, average: float) -> QueryWords:
    written, related, stop_languages = _analysed(query)
    reading = query_language.read(written, stop_languages)
    # The query's own language's function words are neither scored nor marked in extracts;
    # a query of nothing else is searched as written.
    counts = {w: n for w, n in written.items() if w not in reading.function_words} or written
    stemmers: tuple[str, ...] = STEMMERS
    if STEM_BY_LANGUAGE and reading.language in query_language.STEMMER_OF:
        stemmers = (query_language.STEMMER_OF[reading.language],)
    families: dict[str, dict[str, int]] = {}
    for query_word in counts:
        family = families.setdefault(query_word, {})
        for relation in (FORM, *stemmers):
            family.update(related[query_word].get(relation, {}))
    total = max(total, 1)
    merged = _merged(families)
    frequency: dict[str, int] = {}
    forms: dict[str, tuple[str, ...]] = {}
    for head, members in merged.items():
        family = {}
        for query_word in members:
            family.update(families[query_word])
        # Messages holding any word of the family, the words taken as independent: between
        # the largest single count and their sum.
        absent = 1.0
        for held in family.values():
            absent *= max(0.0, 1.0 - held / total)
        frequency[head] = max(1, round(total * (1.0 - absent))) if family else 1
        forms[head] = tuple(sorted(set(family) | set(members)))
    words = list(merged)
    if total < MIN_COLLECTION_FOR_COMMON_WORDS:
        informative = words  # too little mail to call any word common
    else:
        informative = [w for w in words if frequency[w] / total <= COMMON_WORD_SHARE]
    if not informative:  # every word is common: keep the rarest few rather than nothing
        informative = sorted(words, key=lambda w: frequency[w])[:3]
    idf = {w: math.log(1 + (total - frequency[w] + 0.5) / (frequency[w] + 0.5)) for w in informative}
    # A long text keeps its most informative words, as Lucene's MoreLikeThis does: the
    # rarest words weighted by how often the text uses them (a pasted email's own topic
    # recurs, while one rare token in a signature does not).
    uses = {w: sum(counts[q] for q in merged[w]) for w in informative}
    chosen = sorted(informative, key=lambda w: (-uses[w] * idf[w], frequency[w], w))[:MAX_QUERY_WORDS]
    chosen.sort(key=lambda w: (frequency[w], w))  # rarest first: stage 1 reads them in this order
    exact = frozenset(q for w in chosen for q in merged[w])
    return QueryWords(
        weights={w: idf[w] for w in chosen},
        exact=exact,
        documents={w: frequency[w] for w in chosen},
        forms={w: forms[w] for w in chosen},
        average_length=average,
        language=reading.language,
        function_words=frozenset(written) - frozenset(counts),
        collection=total,
    )


def _merged(families: dict[str, dict[str, int]]) -> dict[str, list[str]]:
    """Query words grouped where their families share an indexed word; keyed by the first of each group."""
    groups: list[tuple[set[str], list[str]]] = []
    for query_word in sorted(families):
        members = set(families[query_word]) | {query_word}
        joined = [group for group in groups if group[0] & members]
        for group in joined:
            groups.remove(group)
            members |= group[0]
        words = sorted([query_word, *(w for group in joined for w in group[1])])
        groups.append((members, words))
    return {words[0]: words for _, words in sorted(groups, key=lambda group: group[1][0])}


_read_once: ContextVar[list[tuple[int, int | None, float]] | None] = ContextVar("collection", default=None)


@contextmanager
def collection_read_once() -> Iterator[None]:
    """Within the block the collection's figures are read once: one search ranks and then
    extracts by the same query words, and each would otherwise read them again."""
    token = _read_once.set([])
    try:
        yield
    finally:
        _read_once.reset(token)


def _collection() -> tuple[int, int | None, float]:
    """How many emails are held, which snapshot is current, and its average indexed length.

    The count is the planner's estimate once the table is large (IDF needs the order of
    magnitude, and counting 100,000 rows on every search costs more than the rest of a
    short query's ranking), else an exact count. One statement reads all three.
    """
    held = _read_once.get()
    if held:
        return held[0]
    figures = _read_collection()
    if held is not None:
        held.append(figures)
    return figures


def _read_collection() -> tuple[int, int | None, float]:
    stats = table(LexicalCollectionStat)
    snapshot_id, average = (
        column(LexicalCollectionStat, "id"),
        column(LexicalCollectionStat, "average_length"),
    )
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT c.reltuples::bigint, s.{snapshot_id}, s.{average} FROM pg_class c "
            f"LEFT JOIN (SELECT * FROM {stats} LIMIT 1) s ON true WHERE c.oid = %s::regclass",
            [table(Email)],
        )
        estimate, snapshot, measured = cursor.fetchone()
    if estimate is None or estimate < ESTIMATE_FROM:  # -1 until the table is first analysed
        estimate = Email.objects.count()
    return int(estimate), snapshot, float(measured) if measured else DEFAULT_AVERAGE_LENGTH


def _tsquery(words: list[str], bind: Params) -> str:
    """A tsquery matching any of `words`, bound as parameters (never spliced as text).

    It binds as it builds: call it inside the statement's f-string, where it is placed.
    """
    parts = ", ".join(f"quote_literal({bind(word)})" for word in words)
    return f"array_to_string(ARRAY[{parts}], ' | ')::tsquery"


def author_heads(words: QueryWords, author_words: frozenset[str]) -> frozenset[str]:
    """The query words that name the query's own author (a sign-off, an address).

    A query word names the author when it or a word of its family is one of
    `author_words` (the author's address and display-name words, lowercased).
    """
    if not author_words:
        return frozenset()
    return frozenset(
        head for head in words.weights if author_words.intersection(words.forms.get(head, (head,)))
    )


def rank_lexical(
    candidates: EmailQuerySet,
    query: str,
    limit: int,
    *,
    author_words: frozenset[str] = frozenset(),
    row_facts: RowFacts | None = None,
) -> list[LexicalHit]:
    """Return up to `limit` matches among `candidates`, best first, newest first on ties.

    BM25 over the index itself: unnest(search_vector) gives each matching word's positions
    (its frequency) and weights (its field), in one pass per message. Candidates empty by
    construction (a scope whose folders leave nothing) match nothing.

    `author_words` are the words naming whoever wrote the query text (see author_heads): a
    query word naming them counts nothing among a message's participants, since the author
    being a correspondent of a message is no evidence that the text is about it (with
    AUTHOR_WORDS_LEFT_OUT, it is left out of the query, unless it is all the query holds).
    `row_facts` reads each hit's own row in the same statement (LexicalHit.row), which saves
    a lexical-only search its second round trip.
    """
    if selects_nothing(candidates):
        return []
    words = query_words(query)
    if not words.weights:
        return []
    authored = sorted(author_heads(words, author_words))
    if authored and AUTHOR_WORDS_LEFT_OUT and len(authored) < len(words.weights):
        left = set(authored)
        words = replace(
            words,
            weights={w: idf for w, idf in words.weights.items() if w not in left},
            documents={w: n for w, n in (words.documents or {}).items() if w not in left},
        )
        authored = []
    bind = Params()
    occurrences = _occurrences(candidates, words, limit, bind)

    def real(value: float) -> str:
        # A bound float reaches PostgreSQL as a numeric literal, and numeric arithmetic
        # over every (message, word) row was a large part of a long query's ranking.
        return f"{bind(value)}::float8"

    sql = f"""
        WITH occurrences AS ({occurrences}),
        terms AS (
            SELECT o.*,
                   least((o.a + {real(VARIANT_WEIGHT)} * o.va) * {real(SUBJECT_WEIGHT)}
                         + (o.b + {real(VARIANT_WEIGHT)} * o.vb)
                           * CASE WHEN o.head = ANY({bind(authored)}::text[]) THEN {real(0.0)}
                                  ELSE {real(PARTICIPANTS_WEIGHT)} END
                         + (o.c + {real(VARIANT_WEIGHT)} * o.vc)
                         + (o.d + {real(VARIANT_WEIGHT)} * o.vd) * {real(ATTACHMENT_WEIGHT)},
                         {real(MAX_OCCURRENCES)}) AS tf
            FROM occurrences o
        ),
        -- Stage 2: BM25F over the preselected messages' own word positions and fields.
        -- The score is rounded so that messages scoring alike tie exactly: summed in
        -- whatever order the aggregate meets their words, equal scores differ in the last
        -- bits, and ties are to fall to the newest.
        ranked AS (
            SELECT t.id,
                   round(sum(t.idf * (t.tf * ({real(BM25_K1)} + 1))
                       / (t.tf + {real(BM25_K1)}
                          * (1 - {real(BM25_B)} + {real(BM25_B)} * t.size / {real(words.average_length)}))
                   )::numeric, {bind(SCORE_DIGITS)}) AS score,
                   bool_or(t.a + t.b + t.c + t.d > 0) AS exact,
                   bool_or(t.d + t.vd > 0) AS in_attachment,
                   t.received_at
            FROM terms t
            GROUP BY t.id, t.received_at
            ORDER BY score DESC, t.received_at DESC, t.id DESC
            LIMIT {bind(limit)}
        )
        SELECT r.id::text, r.score, r.exact, r.in_attachment{_row_columns(row_facts, bind)}
        ORDER BY r.score DESC, r.received_at DESC, r.id DESC
    """
    settings = {"work_mem": RANKING_WORK_MEM} if words.collection >= LARGE_MAILBOX else {}
    with cursor_under(settings) as cursor:
        cursor.execute(sql, bind.values)
        rows = cursor.fetchall()
    return [
        LexicalHit(
            email_id=row[0],
            score=float(row[1]),
            exact=bool(row[2]),
            in_attachment=bool(row[3]),
            row=HitRow(*row[4:]) if row_facts else None,
        )
        for row in rows
    ]


def _row_columns(row_facts: RowFacts | None, bind: Params) -> str:
    """The ranked hits' own columns (HitRow, in its order) and the joins reading them, or only FROM."""
    if row_facts is None:
        return "\n        FROM ranked r"
    email, folder, mapping = table(Email), table(Folder), table(FolderMapping)
    ordered = "ORDER BY r.score DESC, r.received_at DESC, r.id DESC"
    role = f"m.{column(FolderMapping, 'role')}" if row_facts.roles else "NULL"
    roles = (
        f"""
        JOIN {folder} f ON f.{column(Folder, "id")} = e.{column(Email, "folder")}
        LEFT JOIN {mapping} m ON m.{column(FolderMapping, "id")} = f.{column(Folder, "mapping")}"""
        if row_facts.roles
        else ""
    )
    return f""",
               r.received_at, e.{column(Email, "sender_address")}, e.{column(Email, "thread_id")},
               e.{column(Email, "is_bulk")}, e.{column(Email, "is_list_mail")},
               {role},
               CASE WHEN row_number() OVER ({ordered}) <= {bind(row_facts.body_window)}
                    THEN left(e.{column(Email, "text_body")}, {bind(row_facts.body_characters)}) ELSE '' END
        FROM ranked r
        JOIN {email} e ON e.{column(Email, "id")} = r.id{roles}"""


def _occurrences(candidates: EmailQuerySet, words: QueryWords, limit: int, bind: Params) -> str:
    """A query of the preselected messages' occurrences of each query word, by field.

    One row per (message, query word) it holds: id, received_at, size (search_length),
    head (the query word), idf, and how often the message holds the word as written (a, b,
    c: subject, participants, body) and another word of its family (va, vb, vc), then the
    same two counts for the attachments' text (d, vd). It binds
    as it builds: call it where the statement places it.
    """
    # One row per (query word, indexed word of its family).
    heads, members, idfs, exact = [], [], [], []
    for head, idf in words.weights.items():
        for form in words.forms.get(head, (head,)):
            heads.append(head)
            members.append(form)
            idfs.append(idf)
            exact.append(form in words.exact)
    generating = words.generating(POSTING_BUDGET, scope_share(candidates, words))
    email, email_id = table(Email), column(Email, "id")
    received_at, vector = column(Email, "received_at"), column(Email, "search_vector")
    length = column(Email, "search_length")
    # Stage 1 runs the caller's selection itself with the word's condition added, so the
    # scope and filters are checked on the rows the GIN index returns rather than by
    # joining every hit back to a second copy of the selection.
    # Only quoted names from the model are formatted in; the family's query comes from the CTE.
    # The LIMIT keeps that subquery per family: flattened into the join, the planner may
    # instead scan every email and test each against every family (1.4 s instead of 0.4 s
    # per long query on the 7,685-email corpus), since it cannot estimate the condition.
    # It also bounds what the rarest family alone may read: generating() always keeps it,
    # and when every query word is common (a typed "it was") its postings were read whole,
    # 265,000 heap rows and 3 s at a million emails, only to choose 300 of messages that
    # all tie in stage 1. The other families' postings fit the budget, so it never cuts them.
    per_word = candidates.extra(where=[f"{email}.{vector} @@ g.matches"])  # noqa: S610

    def held(field: str, as_written: bool) -> str:
        condition = "q.exact" if as_written else "NOT q.exact"
        return (
            f"sum(CASE WHEN {condition} THEN cardinality(array_positions(u.weights, '{field}')) ELSE 0 END)"
        )

    return f"""
        WITH q AS (
            SELECT * FROM unnest({bind(heads)}::text[], {bind(members)}::text[], {bind(idfs)}::float8[],
                                 {bind(exact)}::bool[]) AS q(head, lexeme, idf, exact)
        ),
        g AS (
            SELECT q.head, max(q.idf) AS idf,
                   array_to_string(array_agg(quote_literal(q.lexeme)), ' | ')::tsquery AS matches
            FROM q WHERE q.head = ANY({bind(generating)}::text[]) GROUP BY q.head
        ),
        -- Stage 1, from the GIN index: the messages holding the most (rarest) generating words.
        preselected AS (
            SELECT hit.id, sum(g.idf) AS prescore
            FROM g CROSS JOIN LATERAL (
                {bind.query(per_word.order_by().values("id"))} LIMIT {bind(POSTING_BUDGET)}
            ) AS hit
            GROUP BY hit.id
            ORDER BY prescore DESC, hit.id DESC  -- ties at the cut decided the same way every time
            LIMIT {bind(max(PRESELECT, limit * PRESELECT_PER_RESULT))}
        ),
        matched AS (
            -- Only the query's own lexemes, with their positions and weights: the vector less
            -- (the vector less the query words). Both deletions run in C on sorted arrays,
            -- where unnesting every lexeme of every candidate into rows cost most of stage 2.
            SELECT e.{email_id} AS id, e.{received_at} AS received_at, e.{length} AS size,
                   ts_delete(e.{vector},
                             tsvector_to_array(ts_delete(e.{vector}, {bind(members)}::text[]))) AS vector
            FROM {email} e JOIN preselected p ON p.id = e.{email_id}
        )
        SELECT m.id, m.received_at, m.size, q.head, max(q.idf) AS idf,
               {held("A", True)} AS a, {held("B", True)} AS b, {held("C", True)} AS c,
               {held("A", False)} AS va, {held("B", False)} AS vb, {held("C", False)} AS vc,
               {held("D", True)} AS d, {held("D", False)} AS vd
        FROM matched m
        CROSS JOIN LATERAL unnest(m.vector) AS u
        JOIN q ON q.lexeme = u.lexeme
        GROUP BY m.id, m.received_at, m.size, q.head
    """


def scope_share(candidates: EmailQuerySet, words: QueryWords) -> float:
    """The part of the mailbox `candidates` holds, when it is small enough to count (else 1).

    Counted only when it could change stage 1: when the query's words hold more postings
    than the budget in the whole mailbox.
    """
    if words.postings() <= POSTING_BUDGET or words.collection <= 0:
        return 1.0
    size = selection_size(candidates, SCOPE_COUNTED_WITHIN)
    if size > SCOPE_COUNTED_WITHIN:
        return 1.0
    return min(1.0, max(size, 1) / words.collection)


def occurrence_rows(candidates: EmailQuerySet, query: str, limit: int) -> tuple[list[tuple[Any, ...]], float]:
    """The rows BM25F scores (see _occurrences) and the average length: for bench/retrieval.py,
    which scores them afresh under other weights without rerunning stage 1."""
    words = query_words(query)
    if selects_nothing(candidates) or not words.weights:
        return [], words.average_length
    bind = Params()
    sql = _occurrences(candidates, words, limit, bind)
    with connection.cursor() as cursor:
        cursor.execute(sql, bind.values)
        return cursor.fetchall(), words.average_length


def refresh_term_stats() -> int:
    """Replace the word snapshot (counts and stems) and the collection's figures; return the word count."""
    stats = table(LexicalTermStat)
    word, documents = column(LexicalTermStat, "word"), column(LexicalTermStat, "documents")
    english, german = column(LexicalTermStat, "english"), column(LexicalTermStat, "german")
    english_stem, german_stem = STEMMERS
    # ts_stat takes the query it reads as text: bound as a value, it is never spliced.
    indexed = f"SELECT {column(Email, 'search_vector')} FROM {table(Email)}"
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(f"TRUNCATE {stats}")
        cursor.execute(
            f"INSERT INTO {stats} ({word}, {documents}, {english}, {german}) "
            f"SELECT word, ndoc, coalesce((ts_lexize('{english_stem}', word))[1], ''), "
            f"coalesce((ts_lexize('{german_stem}', word))[1], '') FROM ts_stat(%s)",
            [indexed],
        )
        words: int = cursor.rowcount
        cursor.execute(f"SELECT count(*), avg({column(Email, 'search_length')}) FROM {table(Email)}")
        emails, average = cursor.fetchone()
        LexicalCollectionStat.objects.all().delete()
        LexicalCollectionStat.objects.create(emails=emails, average_length=float(average or 0.0))
        return words


# ts_headline drops what its parser takes for markup (`<email>` in `contact@example.com<email>Here`
# reaches it as a tag and leaves as a space) and marks matches with text mail may hold. So it
# reads a copy of the text in which `<` and the three control characters it is given as marks
# and delimiter are spaces: the copy has the same length, so a fragment found in it gives the
# offsets at which the original text is cut (docs/search.md, Extracts).
_START, _STOP, _DELIMITER = "\x02", "\x03", "\x1f"
_MASKED = "<" + _START + _STOP + _DELIMITER
_MARKS = re.compile(f"[{_START}{_STOP}]")


@dataclass(frozen=True)
class _Fragment:
    text: str  # a substring of the body, exactly as stored
    marks: tuple[tuple[int, int], ...]  # the matched words, as [start, end) offsets in text


def highlight(
    email_ids: list[str], query: str, max_extracts: int, max_characters: int, marker: str = "**"
) -> dict[str, list[str]]:
    """Return up to `max_extracts` extracts of each email's body, matched words between `marker`.

    Each extract is the body's own text (markup-like text included) cut to `max_characters`
    characters, the markers not counted, with "…" after a cut: removing the markers and that
    mark leaves a substring of the body. A fragment that cannot be placed in the body is
    left out rather than altered.
    """
    if not email_ids:
        return {}
    words = query_words(query)
    if not words.weights:
        return {}
    options = _headline_options(max_extracts)
    email_id, body = column(Email, "id"), column(Email, "text_body")
    bind = Params()
    sql = f"""
        SELECT id, text, ts_headline(
            'simple', translate(text, {bind(_MASKED)}, {bind(" " * len(_MASKED))}),
            {_tsquery(words.lexemes(), bind)}, {bind(options)}
        )
        FROM (
            SELECT {email_id}::text AS id, left({body}, {bind(HIGHLIGHT_READ)}) AS text
            FROM {table(Email)} WHERE {email_id} = ANY({bind(email_ids)}::uuid[])
        ) AS bodies
    """
    with connection.cursor() as cursor:
        cursor.execute(sql, bind.values)
        rows = cursor.fetchall()
    extracts: dict[str, list[str]] = {}
    for email_id, text, headline in rows:
        fragments = _placed(headline, text)
        extracts[email_id] = [_render(f, max_characters, marker) for f in fragments[:max_extracts]]
    return extracts


def _headline_options(max_extracts: int) -> str:
    """ts_headline's options for extracts, the same for a body and an attachment's text."""
    return (
        f"StartSel={_START}, StopSel={_STOP}, MaxFragments={max_extracts}, MaxWords=35, MinWords=12, "
        f"FragmentDelimiter={_DELIMITER}, HighlightAll=false"
    )


def _placed(headline: str, text: str) -> list[_Fragment]:
    """ts_headline's fragments holding a match, located in the masked copy and cut from `text`."""
    masked = text
    for character in _MASKED:  # str.replace per character: translate() walks the text in Python's slow path
        if character in masked:
            masked = masked.replace(character, " ")
    placed, cursor = [], 0
    for piece in headline.split(_DELIMITER):
        joined, marks = _unmarked(piece)
        found = joined.strip()
        if not marks or not found:
            continue
        lead = len(joined) - len(joined.lstrip())
        at = masked.find(found, cursor)
        if at < 0:
            at = masked.find(found)
        if at < 0:
            continue
        shifted = tuple(
            (max(0, s - lead), min(len(found), e - lead))
            for s, e in marks
            if e - lead > 0 and s - lead < len(found)
        )
        placed.append(_Fragment(text=text[at : at + len(found)], marks=shifted))
        cursor = at + len(found)
    return placed


def _unmarked(piece: str) -> tuple[str, list[tuple[int, int]]]:
    """`piece` without its start and stop marks, and the [start, stop) offsets they enclosed."""
    parts: list[str] = []
    marks: list[tuple[int, int]] = []
    length = start = last = 0
    for mark in _MARKS.finditer(piece):
        parts.append(piece[last : mark.start()])
        length += mark.start() - last
        if mark.group() == _START:
            start = length
        else:
            marks.append((start, length))
        last = mark.end()
    parts.append(piece[last:])
    return "".join(parts), marks


def _render(fragment: _Fragment, max_characters: int, marker: str) -> str:
    """`fragment` cut to `max_characters` of its text, each match between `marker`s, "…" after a cut."""
    shown = fragment.text[:max_characters]
    out, position = [], 0
    for start, end in fragment.marks:
        if start >= len(shown):
            break
        end = min(end, len(shown))
        out += [shown[position:start], marker, shown[start:end], marker]
        position = end
    out.append(shown[position:])
    return "".join(out) + ("…" if len(fragment.text) > max_characters else "")


@dataclass(frozen=True)
class AttachmentExtracts:
    """Where a query matched in one attachment's text: which attachment, and extracts from it."""

    position: int  # the attachment's place among the email's attachments, from 0
    file_name: str
    extracts: list[str]


def highlight_attachments(
    email_ids: list[str], query: str, max_extracts: int, max_characters: int, marker: str = "**"
) -> dict[str, list[AttachmentExtracts]]:
    """The attachments of each email whose indexed text holds a query word, with extracts.

    Which emails matched in an attachment is read from the stored index (the words weighted
    D), so no text is parsed for the others; for those, each attachment's own text (up to
    ATTACHMENT_HIGHLIGHT_READ) is tested and cut into extracts as `highlight` cuts a body.
    An attachment whose only match lies past that bound is not named.
    """
    if not email_ids:
        return {}
    words = query_words(query)
    if not words.weights:
        return {}
    options = _headline_options(max_extracts)
    email, email_id = table(Email), column(Email, "id")
    vector, joined = column(Email, "search_vector"), column(Email, "attachment_text")
    part = table(AttachmentText)
    part_email, offset, characters = (
        column(AttachmentText, "email"),
        column(AttachmentText, "offset"),
        column(AttachmentText, "characters"),
    )
    part_index, file_name = column(AttachmentText, "part_index"), column(AttachmentText, "file_name")
    bind = Params()
    query_sql = _tsquery(words.lexemes(), bind)
    sql = f"""
        WITH q AS (SELECT {query_sql} AS q),
        matched AS (
            SELECT e.{email_id} AS id, e.{joined} AS joined FROM {email} e, q
            WHERE e.{email_id} = ANY({bind(email_ids)}::uuid[]) AND ts_filter(e.{vector}, '{{d}}') @@ q.q
        ),
        parts AS (
            SELECT m.id, p.{file_name} AS file_name, p.{characters} AS characters,
                   row_number() OVER (PARTITION BY m.id ORDER BY p.{part_index}) - 1 AS position,
                   substr(m.joined, p.{offset} + 1,
                          least(p.{characters}, {bind(ATTACHMENT_HIGHLIGHT_READ)})) AS text,
                   p.{offset} < {bind(INDEXED_ATTACHMENT_CHARACTERS)} AS indexed
            FROM matched m JOIN {part} p ON p.{part_email} = m.id
        )
        SELECT id::text, position, file_name, text, ts_headline(
            'simple', translate(text, {bind(_MASKED)}, {bind(" " * len(_MASKED))}), q.q, {bind(options)}
        ), to_tsvector('simple', text) @@ q.q
        FROM parts, q
        WHERE characters > 0 AND indexed
        ORDER BY id, position
    """
    with connection.cursor() as cursor:
        cursor.execute(sql, bind.values)
        rows = cursor.fetchall()
    found: dict[str, list[AttachmentExtracts]] = {}
    for found_id, position, name, text, headline, holds in rows:
        if not holds:
            continue
        fragments = _placed(headline, text)
        found.setdefault(found_id, []).append(
            AttachmentExtracts(
                position=int(position),
                file_name=name,
                extracts=[_render(f, max_characters, marker) for f in fragments[:max_extracts]],
            )
        )
    return found

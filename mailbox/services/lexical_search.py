"""Lexical ranking over Email.search_vector: candidates, ranks and highlighted extracts.

Ranking is BM25 computed from the index: each query word a message holds scores its
inverse document frequency, saturated by how often it occurs and normalized by the
message's length, and a word in the subject counts extra. Query
words are the query's lexemes in every configuration of mailbox.lexical (exact words and
English and German stems); words held by more than COMMON_WORD_SHARE of all mail carry
almost no evidence and are dropped, which also keeps the candidate set small. Document
frequencies come from the LexicalTermStat snapshot (a word missing from it counts as rare).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from django.db import connection, transaction

from mailbox.lexical import CONFIGURATIONS
from mailbox.models import Email, EmailQuerySet, LexicalTermStat
from mailbox.services.raw_sql import Params, column, selects_nothing, table

COMMON_WORD_SHARE = 0.2
MIN_COLLECTION_FOR_COMMON_WORDS = 50
MAX_QUERY_WORDS = 32
SUBJECT_BONUS = 0.5
BM25_K1 = 1.2
BM25_B = 0.75
# Typical distinct words per indexed email (three configurations); length normalization
# only needs the right order of magnitude.
AVERAGE_DISTINCT_WORDS = 230.0
# Messages stage 1 hands to the BM25 stage (at least five times the depth asked for): 100
# instead of 300 cost lexical recall@10 0.535 -> 0.507 on the reply pairs (bench/retrieval.py).
PRESELECT = 300
# Postings (word, message pairs) stage 1 may read to choose candidates: the rarest query
# words whose document counts fit. Long pasted queries otherwise read every posting of
# 32 words, which is most of a large mailbox (bench/search.py).
POSTING_BUDGET = 20_000
# Characters of each body ts_headline reads for extracts: its cost grows with the text,
# and an extract from far down a very long message rarely helps a reader choose it.
HIGHLIGHT_READ = 8000
# Below this many emails (by the planner's estimate) query_words counts them exactly.
ESTIMATE_FROM = 20_000


@dataclass(frozen=True)
class LexicalHit:
    email_id: str
    score: float
    exact: bool  # whether an unstemmed query word matched, not only a stem


@dataclass(frozen=True)
class QueryWords:
    weights: dict[str, float]  # word -> idf, rarest first
    exact: frozenset[str]  # the words as written (the `simple` configuration)
    documents: dict[str, int] | None = None  # word -> messages holding it (the snapshot's count)

    def generating(self, budget: int) -> list[str]:
        """The rarest words whose postings fit `budget` (at least one): they choose candidates.

        A message holding none of them holds only words common enough that it cannot
        outscore one holding a rare word by much, so it is not worth reading postings of
        thousands of messages to find it; every word still counts in the BM25 stage.
        """
        documents = self.documents or {}
        chosen, spent = [], 0
        for word in self.weights:
            spent += documents.get(word, 1)
            if chosen and spent > budget:
                break
            chosen.append(word)
        return chosen


def query_words(query: str) -> QueryWords:
    """The query's informative words with their inverse document frequency."""
    bind = Params()
    selects = " UNION ".join(
        f"SELECT unnest(tsvector_to_array(to_tsvector('{config}', {bind(query)}))), '{config}'"
        for config in CONFIGURATIONS
    )
    with connection.cursor() as cursor:
        cursor.execute(selects, bind.values)
        rows = cursor.fetchall()
    words = {word for word, _ in rows}
    exact = frozenset(word for word, config in rows if config == "simple")
    total = max(_collection_size(), 1)
    known = dict(LexicalTermStat.objects.filter(word__in=words).values_list("word", "documents"))
    frequency = {word: known.get(word, 1) for word in words}
    if total < MIN_COLLECTION_FOR_COMMON_WORDS:
        informative = list(words)  # too little mail to call any word common
    else:
        informative = [w for w in words if frequency[w] / total <= COMMON_WORD_SHARE]
    if not informative:  # every word is common: keep the rarest few rather than nothing
        informative = sorted(words, key=lambda w: frequency[w])[:3]
    chosen = sorted(informative, key=lambda w: (frequency[w], w))[:MAX_QUERY_WORDS]
    weights = {w: math.log(1 + (total - frequency[w] + 0.5) / (frequency[w] + 0.5)) for w in chosen}
    return QueryWords(weights=weights, exact=exact & set(chosen), documents={w: frequency[w] for w in chosen})


def _collection_size() -> int:
    """How many emails are held: the planner's estimate once it is large, else a count.

    IDF needs the order of magnitude, and counting 100,000 rows on every search costs more
    than the rest of a short query's ranking.
    """
    with connection.cursor() as cursor:
        cursor.execute("SELECT reltuples::bigint FROM pg_class WHERE oid = %s::regclass", [table(Email)])
        (estimate,) = cursor.fetchone()
    if estimate is None or estimate < ESTIMATE_FROM:  # -1 until the table is first analysed
        return Email.objects.count()
    return int(estimate)


def _tsquery(words: list[str], bind: Params) -> str:
    """A tsquery matching any of `words`, bound as parameters (never spliced as text).

    It binds as it builds: call it inside the statement's f-string, where it is placed.
    """
    parts = ", ".join(f"quote_literal({bind(word)})" for word in words)
    return f"array_to_string(ARRAY[{parts}], ' | ')::tsquery"


def rank_lexical(candidates: EmailQuerySet, query: str, limit: int) -> list[LexicalHit]:
    """Return up to `limit` matches among `candidates`, best first, newest first on ties.

    BM25 over the index itself: unnest(search_vector) gives each matching word's positions
    (its frequency) and weights (whether it is in the subject), in one pass per message.
    Candidates empty by construction (a scope whose folders leave nothing) match nothing.
    """
    if selects_nothing(candidates):
        return []
    words = query_words(query)
    if not words.weights:
        return []
    terms, idfs, exact = list(words.weights), list(words.weights.values()), sorted(words.exact)
    generating = words.generating(POSTING_BUDGET)
    email, email_id = table(Email), column(Email, "id")
    received_at, vector = column(Email, "received_at"), column(Email, "search_vector")
    # Stage 1 runs the caller's selection itself with the word's condition added, so the
    # scope and filters are checked on the rows the GIN index returns rather than by
    # joining every hit back to a second copy of the selection.
    # Only quoted names from the model are formatted in; the word comes from the CTE.
    per_word = candidates.extra(where=[f"{email}.{vector} @@ quote_literal(g.word)::tsquery"])  # noqa: S610
    bind = Params()
    sql = f"""
        WITH q AS (SELECT * FROM unnest({bind(terms)}::text[], {bind(idfs)}::float8[]) AS q(word, idf)),
        g AS (SELECT q.word, q.idf FROM q WHERE q.word = ANY({bind(generating)}::text[])),
        -- Stage 1, from the GIN index: the messages holding the most (rarest) generating words.
        preselected AS (
            SELECT hit.id, sum(g.idf) AS prescore
            FROM g CROSS JOIN LATERAL ({bind.query(per_word.order_by().values("id"))}) AS hit
            GROUP BY hit.id
            ORDER BY prescore DESC
            LIMIT {bind(max(PRESELECT, limit * 5))}
        ),
        matched AS (
            -- Only the query's own lexemes, with their positions and weights: the vector less
            -- (the vector less the query words). Both deletions run in C on sorted arrays,
            -- where unnesting every lexeme of every candidate into rows cost most of stage 2.
            SELECT e.{email_id} AS id, e.{received_at} AS received_at, length(e.{vector}) AS size,
                   ts_delete(e.{vector},
                             tsvector_to_array(ts_delete(e.{vector}, {bind(terms)}::text[]))) AS vector
            FROM {email} e JOIN preselected p ON p.id = e.{email_id}
        )
        -- Stage 2: BM25 over the preselected messages' own word positions and weights.
        SELECT m.id::text,
               sum(q.idf * (
                   (least(cardinality(u.positions), 50) * ({bind(BM25_K1)} + 1))
                   / (least(cardinality(u.positions), 50)
                      + {bind(BM25_K1)}
                        * (1 - {bind(BM25_B)} + {bind(BM25_B)} * m.size / {bind(AVERAGE_DISTINCT_WORDS)}))
                   + CASE WHEN 'A' = ANY(u.weights) THEN {bind(SUBJECT_BONUS)} ELSE 0 END
               )) AS score,
               bool_or(u.lexeme = ANY({bind(exact)}::text[])) AS exact,
               m.received_at
        FROM matched m
        CROSS JOIN LATERAL unnest(m.vector) AS u
        JOIN q ON q.word = u.lexeme
        GROUP BY m.id, m.received_at
        ORDER BY score DESC, m.received_at DESC, m.id DESC
        LIMIT {bind(limit)}
    """
    with connection.cursor() as cursor:
        cursor.execute(sql, bind.values)
        rows = cursor.fetchall()
    return [LexicalHit(email_id=row[0], score=float(row[1]), exact=bool(row[2])) for row in rows]


def refresh_term_stats() -> int:
    """Replace the document-frequency snapshot from the index itself; return the word count."""
    stats = table(LexicalTermStat)
    word, documents = column(LexicalTermStat, "word"), column(LexicalTermStat, "documents")
    # ts_stat takes the query it reads as text: bound as a value, it is never spliced.
    indexed = f"SELECT {column(Email, 'search_vector')} FROM {table(Email)}"
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(f"TRUNCATE {stats}")
        cursor.execute(
            f"INSERT INTO {stats} ({word}, {documents}) SELECT word, ndoc FROM ts_stat(%s)", [indexed]
        )
        return cursor.rowcount


# ts_headline drops what its parser takes for markup (`<email>` in `contact@example.com<email>Here`
# reaches it as a tag and leaves as a space) and marks matches with text mail may hold. So it
# reads a copy of the text in which `<` and the three control characters it is given as marks
# and delimiter are spaces: the copy has the same length, so a fragment found in it gives the
# offsets at which the original text is cut (docs/search.md, Extracts).
_START, _STOP, _DELIMITER = "\x02", "\x03", "\x1f"
_MASKED = "<" + _START + _STOP + _DELIMITER
_MASK = str.maketrans(_MASKED, " " * len(_MASKED))


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
    options = (
        f"StartSel={_START}, StopSel={_STOP}, MaxFragments={max_extracts}, MaxWords=35, MinWords=12, "
        f"FragmentDelimiter={_DELIMITER}, HighlightAll=false"
    )
    email_id, body = column(Email, "id"), column(Email, "text_body")
    bind = Params()
    sql = f"""
        SELECT id, text, ts_headline(
            'simple', translate(text, {bind(_MASKED)}, {bind(" " * len(_MASKED))}),
            {_tsquery(list(words.weights), bind)}, {bind(options)}
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


def _placed(headline: str, text: str) -> list[_Fragment]:
    """ts_headline's fragments holding a match, located in the masked copy and cut from `text`."""
    masked = text.translate(_MASK)
    placed, cursor = [], 0
    for piece in headline.split(_DELIMITER):
        plain, marks, start = [], [], 0
        for character in piece:
            if character == _START:
                start = len(plain)
            elif character == _STOP:
                marks.append((start, len(plain)))
            else:
                plain.append(character)
        joined = "".join(plain)
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

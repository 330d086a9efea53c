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

from django.db import connection

from mailbox.lexical import CONFIGURATIONS
from mailbox.models import Email, EmailQuerySet, LexicalTermStat

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
    selects = " UNION ".join(
        f"SELECT unnest(tsvector_to_array(to_tsvector('{config}', %(q)s))), '{config}'"
        for config in CONFIGURATIONS
    )
    with connection.cursor() as cursor:
        cursor.execute(selects, {"q": query})
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
        cursor.execute("SELECT reltuples::bigint FROM pg_class WHERE oid = 'mailbox_email'::regclass")
        (estimate,) = cursor.fetchone()
    if estimate is None or estimate < ESTIMATE_FROM:  # -1 until the table is first analysed
        return Email.objects.count()
    return int(estimate)


def _tsquery(words: list[str], params: dict, prefix: str) -> str:
    """A tsquery matching any of `words`, bound as parameters (never spliced as text)."""
    parts = []
    for index, word in enumerate(words):
        params[f"{prefix}{index}"] = word
        parts.append(f"quote_literal(%({prefix}{index})s)")
    return f"array_to_string(ARRAY[{', '.join(parts)}], ' | ')::tsquery"


def rank_lexical(candidates: EmailQuerySet, query: str, limit: int) -> list[LexicalHit]:
    """Return up to `limit` matches among `candidates`, best first, newest first on ties.

    BM25 over the index itself: unnest(search_vector) gives each matching word's positions
    (its frequency) and weights (whether it is in the subject), in one pass per message.
    """
    words = query_words(query)
    if not words.weights:
        return []
    params: dict = {
        "limit": limit,
        "words": list(words.weights),
        "idfs": list(words.weights.values()),
        "exact": sorted(words.exact),
        "k1": BM25_K1,
        "b": BM25_B,
        "avg": AVERAGE_DISTINCT_WORDS,
        "subject": SUBJECT_BONUS,
    }
    params["generating"] = words.generating(POSTING_BUDGET)
    # Stage 1 runs the caller's selection itself with the word's condition added, so the
    # scope and filters are checked on the rows the GIN index returns rather than by
    # joining every hit back to a second copy of the selection.
    per_word = candidates.extra(where=["mailbox_email.search_vector @@ quote_literal(g.word)::tsquery"])
    inner_sql, inner_params = per_word.order_by().values("id").query.sql_with_params()
    for index, value in enumerate(inner_params):
        params[f"p{index}"] = value
    params["preselect"] = max(PRESELECT, limit * 5)
    sql = f"""
        WITH q AS (SELECT * FROM unnest(%(words)s::text[], %(idfs)s::float8[]) AS q(word, idf)),
        g AS (SELECT q.word, q.idf FROM q WHERE q.word = ANY(%(generating)s::text[])),
        -- Stage 1, from the GIN index: the messages holding the most (rarest) generating words.
        preselected AS (
            SELECT hit.id, sum(g.idf) AS prescore
            FROM g CROSS JOIN LATERAL ({_name_positional(inner_sql, len(inner_params))}) AS hit
            GROUP BY hit.id
            ORDER BY prescore DESC
            LIMIT %(preselect)s
        ),
        matched AS (
            -- Only the query's own lexemes, with their positions and weights: the vector less
            -- (the vector less the query words). Both deletions run in C on sorted arrays,
            -- where unnesting every lexeme of every candidate into rows cost most of stage 2.
            SELECT e.id, e.received_at, length(e.search_vector) AS size,
                   ts_delete(e.search_vector,
                             tsvector_to_array(ts_delete(e.search_vector, %(words)s::text[]))) AS vector
            FROM mailbox_email e JOIN preselected p ON p.id = e.id
        )
        -- Stage 2: BM25 over the preselected messages' own word positions and weights.
        SELECT m.id::text,
               sum(q.idf * (
                   (least(cardinality(u.positions), 50) * (%(k1)s + 1))
                   / (least(cardinality(u.positions), 50)
                      + %(k1)s * (1 - %(b)s + %(b)s * m.size / %(avg)s))
                   + CASE WHEN 'A' = ANY(u.weights) THEN %(subject)s ELSE 0 END
               )) AS score,
               bool_or(u.lexeme = ANY(%(exact)s::text[])) AS exact,
               m.received_at
        FROM matched m
        CROSS JOIN LATERAL unnest(m.vector) AS u
        JOIN q ON q.word = u.lexeme
        GROUP BY m.id, m.received_at
        ORDER BY score DESC, m.received_at DESC, m.id DESC
        LIMIT %(limit)s
    """
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        rows = cursor.fetchall()
    return [LexicalHit(email_id=row[0], score=float(row[1]), exact=bool(row[2])) for row in rows]


def refresh_term_stats() -> int:
    """Replace the document-frequency snapshot from the index itself; return the word count."""
    from django.db import transaction

    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(f"TRUNCATE {LexicalTermStat._meta.db_table}")
        cursor.execute(
            f"INSERT INTO {LexicalTermStat._meta.db_table} (word, documents) "
            "SELECT word, ndoc FROM ts_stat('SELECT search_vector FROM mailbox_email')"
        )
        return cursor.rowcount


def _name_positional(sql: str, count: int) -> str:
    """Turn the subquery's %s placeholders into %(pN)s so one mapping binds everything."""
    out, index, position = [], 0, 0
    while True:
        found = sql.find("%s", position)
        if found < 0 or index >= count:
            out.append(sql[position:])
            return "".join(out)
        out.append(sql[position:found])
        out.append(f"%(p{index})s")
        index += 1
        position = found + 2


def highlight(
    email_ids: list[str], query: str, max_extracts: int, max_characters: int
) -> dict[str, list[str]]:
    """Return up to `max_extracts` extracts of each email's body, matched words between **."""
    if not email_ids:
        return {}
    words = query_words(query)
    if not words.weights:
        return {}
    params: dict = {"ids": email_ids, "read": HIGHLIGHT_READ}
    any_word = _tsquery(list(words.weights), params, "a")
    params["options"] = (
        f"StartSel=**, StopSel=**, MaxFragments={max_extracts}, MaxWords=35, MinWords=12, "
        "FragmentDelimiter=\x1f, HighlightAll=false"
    )
    sql = f"""
        SELECT id::text, ts_headline('simple', left(text_body, %(read)s), {any_word}, %(options)s)
        FROM mailbox_email WHERE id = ANY(%(ids)s::uuid[])
    """
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        rows = cursor.fetchall()
    extracts: dict[str, list[str]] = {}
    for email_id, headline in rows:
        fragments = [fragment.strip() for fragment in headline.split("\x1f") if "**" in fragment]
        extracts[email_id] = [_cut(fragment, max_characters) for fragment in fragments[:max_extracts]]
    return extracts


def _cut(fragment: str, max_characters: int) -> str:
    """Cut an extract to `max_characters` of message text (the ** markers are not counted)."""
    counted, out, index = 0, [], 0
    while index < len(fragment) and counted < max_characters:
        if fragment.startswith("**", index):
            out.append("**")
            index += 2
            continue
        out.append(fragment[index])
        counted += 1
        index += 1
    text = "".join(out)
    if text.count("**") % 2:
        text += "**"
    return text + ("…" if index < len(fragment) else "")

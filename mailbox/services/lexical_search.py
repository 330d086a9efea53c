"""Lexical ranking over Email.search_vector: candidates, ranks and highlighted extracts.

The query is parsed by websearch_to_tsquery in each configuration of mailbox.lexical and
the three are OR-ed, so stemmed and exact words both count. A message matches if it holds
any query word (OR), which is what long, sentence-like queries need; one that holds every
word (AND) in some configuration ranks above those that do not. Ranks are ts_rank with
document-length normalization, subject above participants above body.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.db import connection

from mailbox.lexical import CONFIGURATIONS
from mailbox.models import EmailQuerySet

# ts_rank weights for D, C, B, A: body (C) 0.2, participants (B) 0.4, subject (A) 1.0.
RANK_WEIGHTS = "{0.05, 0.2, 0.4, 1.0}"
ALL_WORDS_BONUS = 1.0
TYPED_QUERY_WORDS = 12


@dataclass(frozen=True)
class LexicalHit:
    email_id: str
    score: float
    exact: bool  # whether the unstemmed words matched, not only their stems


def _any_word_query(config: str) -> str:
    # Every distinct word of the query, OR-ed, as `config` normalizes it.
    return (
        f"(SELECT coalesce(string_agg(quote_literal(word), ' | '), '') FROM "
        f"unnest(tsvector_to_array(to_tsvector('{config}', %(q)s))) AS word)::tsquery"
    )


def _all_words_query(config: str, typed: bool) -> str:
    # Short queries are typed searches: websearch syntax ("phrase", -word, or). Long ones are
    # pasted text, where a dash or a quote is punctuation rather than an operator.
    function = "websearch_to_tsquery" if typed else "plainto_tsquery"
    return f"{function}('{config}', %(q)s)"


def _query_sql(query: str) -> tuple[str, str, str]:
    typed = len(query.split()) <= TYPED_QUERY_WORDS
    any_words = " || ".join(_any_word_query(config) for config in CONFIGURATIONS)
    all_words = " || ".join(_all_words_query(config, typed) for config in CONFIGURATIONS)
    return any_words, all_words, _any_word_query("simple")


def rank_lexical(candidates: EmailQuerySet, query: str, limit: int) -> list[LexicalHit]:
    """Return up to `limit` matches among `candidates`, best first, newest first on ties."""
    inner_sql, inner_params = candidates.values("id").query.sql_with_params()
    any_words, all_words, exact = _query_sql(query)
    sql = f"""
        WITH q AS (SELECT ({any_words}) AS any_words, ({all_words}) AS all_words, ({exact}) AS exact)
        SELECT e.id::text,
               ts_rank('{RANK_WEIGHTS}', e.search_vector, q.any_words, 1)
                 + CASE WHEN e.search_vector @@ q.all_words THEN {ALL_WORDS_BONUS} ELSE 0 END AS score,
               e.search_vector @@ q.exact AS exact
        FROM mailbox_email e, q
        WHERE e.id IN ({inner_sql}) AND e.search_vector @@ q.any_words
        ORDER BY score DESC, e.received_at DESC, e.id DESC
        LIMIT %(limit)s
    """
    params = {"q": query, "limit": limit}
    # The candidate subquery comes with positional parameters; name them for one dict.
    for index, value in enumerate(inner_params):
        params[f"p{index}"] = value
    sql = _name_positional(sql, len(inner_params))
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return [
            LexicalHit(email_id=row[0], score=float(row[1]), exact=bool(row[2])) for row in cursor.fetchall()
        ]


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
    any_words, _, _ = _query_sql(query)
    options = (
        f"StartSel=**, StopSel=**, MaxFragments={max_extracts}, MaxWords=35, MinWords=12, "
        "FragmentDelimiter=\x1f, HighlightAll=false"
    )
    sql = f"""
        SELECT id::text, ts_headline('english', left(text_body, 20000), ({any_words}), %(options)s)
        FROM mailbox_email WHERE id::text = ANY(%(ids)s) AND search_vector @@ ({any_words})
    """
    with connection.cursor() as cursor:
        cursor.execute(sql, {"q": query, "ids": email_ids, "options": options})
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

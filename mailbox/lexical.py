"""The lexical index: one tsvector per email, every word once, as written.

Each field is indexed with PostgreSQL's `simple` configuration only: one lexeme per word
position (the word lowercased), so a word in the mail is counted once however many
languages it could be stemmed in. Stemming happens at query time instead: the word
statistics snapshot (LexicalTermStat) records each indexed word's English and German stem,
and a query word stands for every indexed word sharing its own word or one of its stems
("payments" finds "payment", "Zahlungen" finds "Zahlung"), scored as one word
(docs/search.md). The subject weighs most (A), then the participants (B), then the body
(C). Bodies are indexed up to INDEXED_BODY_CHARACTERS: tsvector positions stop at 16,383
anyway.

One configuration instead of three (simple, English, German) also makes storing mail
cheaper: computing the tsvector was most of PostgreSQL's work per inserted email.
"""

from __future__ import annotations

from django.contrib.postgres.search import SearchVector
from django.db.models.expressions import CombinedExpression
from django.db.models.functions import Left, Length

CONFIGURATION = "simple"
# Stemmers a query word is related through: a word shares a "family" with every indexed
# word that has its English or its German stem.
STEMMERS = ("english_stem", "german_stem")
INDEXED_BODY_CHARACTERS = 100_000


def lexical_document() -> CombinedExpression:
    """The expression of Email.search_vector (a generated column: immutable functions only)."""
    subject = SearchVector("subject", config=CONFIGURATION, weight="A")
    participants = SearchVector("participants_text", config=CONFIGURATION, weight="B")
    body = SearchVector(Left("text_body", INDEXED_BODY_CHARACTERS), config=CONFIGURATION, weight="C")
    return subject + participants + body


def indexed_length() -> CombinedExpression:
    """The expression of Email.search_length: characters of what the index read.

    BM25's length normalization compares a message with the collection's average length;
    characters are proportional to words closely enough for a ratio, and cost nothing to
    compute when the row is written.
    """
    body = Length(Left("text_body", INDEXED_BODY_CHARACTERS))
    return Length("subject") + Length("participants_text") + body

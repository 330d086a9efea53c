"""The lexical index: one tsvector per email, every word once, as written.

Fields are indexed with PostgreSQL's `simple` configuration only (the word lowercased), so a
word counts once however many languages could stem it, and storing stays cheap; stemming
happens at query time through the LexicalTermStat snapshot's English and German stems
(docs/search.md). Weights: subject A, participants B, body C, the text extracted from
attachments D (a field of its own, so ranking weighs it apart from the body). Bodies and
attachment text are each indexed up to their bound, since tsvector positions stop at 16,383
anyway. The document length BM25 normalizes by leaves attachment text out: a cover note
with a long PDF is still judged as a short message by its own words.
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
INDEXED_ATTACHMENT_CHARACTERS = 100_000


def lexical_document() -> CombinedExpression:
    """The expression of Email.search_vector (a generated column: immutable functions only)."""
    subject = SearchVector("subject", config=CONFIGURATION, weight="A")
    participants = SearchVector("participants_text", config=CONFIGURATION, weight="B")
    body = SearchVector(Left("text_body", INDEXED_BODY_CHARACTERS), config=CONFIGURATION, weight="C")
    attachments = SearchVector(
        Left("attachment_text", INDEXED_ATTACHMENT_CHARACTERS), config=CONFIGURATION, weight="D"
    )
    return subject + participants + body + attachments


def indexed_length() -> CombinedExpression:
    """The expression of Email.search_length: characters of what the index read.

    BM25's length normalization compares a message with the collection's average length;
    characters are proportional to words closely enough for a ratio, and cost nothing to
    compute when the row is written.
    """
    body = Length(Left("text_body", INDEXED_BODY_CHARACTERS))
    return Length("subject") + Length("participants_text") + body

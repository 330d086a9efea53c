"""The lexical index: one tsvector per email, built the same way for documents and queries.

Mail is multilingual, so every field is indexed three times: with the `simple`
configuration (exact words, any language) and stemmed for English and German. A query is
built from the same three configurations, so a stemmed match ("payments" for "payment")
and an exact one are both found, and a result can say which it was. The subject weighs
most (A), then the participants (B), then the body (C). Bodies are indexed up to
INDEXED_BODY_CHARACTERS: tsvector positions stop at 16,383 anyway.
"""

from __future__ import annotations

from django.contrib.postgres.search import SearchVector
from django.db.models.functions import Left

CONFIGURATIONS = ("simple", "english", "german")
STEMMED = ("english", "german")
INDEXED_BODY_CHARACTERS = 100_000


def lexical_document() -> SearchVector:
    """The expression of Email.search_vector (a generated column: immutable functions only)."""
    parts = None
    for config in CONFIGURATIONS:
        for field, weight in (("subject", "A"), ("participants_text", "B")):
            vector = SearchVector(field, config=config, weight=weight)
            parts = vector if parts is None else parts + vector
        body = SearchVector(Left("text_body", INDEXED_BODY_CHARACTERS), config=config, weight="C")
        parts = parts + body
    return parts

"""Reference documents searched for one draft: asked only while the rerank pass is on.

The same two strings as gather, in one fused ranking of the account's reference chunks:
the raw mail ranks them lexically (any of its words, BM25-like ts_rank over the chunk's
index), the condensed query by vector when the chunks are embedded in the active profile.
Each chunk comes back as a Passage whose id is `reference:<chunk id>` and whose folder is
`reference`, so the rerank pass judges it beside mail and fit can drop it like any source;
source_ids never carry it. The vector arm embeds the condensed query once more (the raw
mail never reaches the embedding endpoint here either).
"""

from __future__ import annotations

import re

from django.db import connection

from answering.models import ReferenceChunk, ReferenceDocument
from mailbox.services import embedding
from mailbox.services.embedding import VectorHit
from mailbox.services.lexical_search import LexicalHit
from mailbox.services.passages import Passage
from mailbox.services.raw_sql import Params, column, table
from mailbox.services.search import NO_FLOOR, Fusion, fused_scores
from mailfathom.providers import get_embedder
from mailfathom.providers.errors import ProviderError

PREFIX = "reference:"
FOLDER = "reference"
MAX_WORDS = 64
DEPTH = 50
# Not mail search's RRF_K: that was chosen on reply pairs, which say nothing of document chunks.
REFERENCE_RRF_K = 10
_WORD = re.compile(r"\w{2,}")


def is_reference(passage: Passage) -> bool:
    return passage.stored_email_id.startswith(PREFIX)


def _lexical(account_pk: int, raw: str) -> list[int]:
    words = list(dict.fromkeys(word.lower() for word in _WORD.findall(raw)))[:MAX_WORDS]
    if not words:
        return []
    vector, document = column(ReferenceChunk, "search_vector"), column(ReferenceChunk, "document")
    terms = " | ".join(words)
    bind = Params()  # values are bound in the order the f-string reads them
    sql = f"""
        SELECT c.id FROM {table(ReferenceChunk)} c JOIN {table(ReferenceDocument)} d ON d.id = c.{document}
        WHERE d.account_id = {bind(account_pk)} AND c.{vector} @@ to_tsquery('simple', {bind(terms)})
        ORDER BY ts_rank(c.{vector}, to_tsquery('simple', {bind(terms)})) DESC, c.id
        LIMIT {bind(DEPTH)}
    """
    with connection.cursor() as cursor:
        cursor.execute(sql, bind.values)
        return [row[0] for row in cursor.fetchall()]


def _vector(account_pk: int, condensed: str) -> list[int]:
    embedder, profile = get_embedder(), embedding.active_profile()
    if embedder is None or profile is None or not embedding.profile_matches():
        return []
    try:
        query_vector = str(embedder.embed_query(condensed))
    except ProviderError:
        return []
    dims = int(profile.dimensions)
    chunk_vector = f"c.{column(ReferenceChunk, 'embedding')}::vector({dims})"
    bind = Params()
    sql = f"""
        SELECT c.id FROM {table(ReferenceChunk)} c JOIN {table(ReferenceDocument)} d
          ON d.id = c.{column(ReferenceChunk, "document")}
        WHERE d.account_id = {bind(account_pk)} AND c.{column(ReferenceChunk, "profile")} = {bind(profile.pk)}
        ORDER BY {chunk_vector} <=> {bind(query_vector)}::vector({dims})
        LIMIT {bind(DEPTH)}
    """
    with connection.cursor() as cursor:
        cursor.execute(sql, bind.values)
        return [row[0] for row in cursor.fetchall()]


def search_references(
    *, account_pk: int, account_id: str, condensed: str, raw: str, limit: int, max_characters: int
) -> list[Passage]:
    """Up to `limit` chunks of the account's reference documents, fused best first."""
    # The search's fusion by rank, with nothing held back: every chunk either arm found counts.
    lexical = [
        LexicalHit(email_id=str(chunk_id), score=0.0, exact=False) for chunk_id in _lexical(account_pk, raw)
    ]
    vector = [VectorHit(email_id=str(chunk_id), distance=0.0) for chunk_id in _vector(account_pk, condensed)]
    whole = Fusion(method="rrf", k=REFERENCE_RRF_K, min_similarity=NO_FLOOR, enough_lexical=len(lexical) + 1)
    scores, _kinds, _held_back = fused_scores(lexical, vector, whole)
    order = [
        int(chunk_id) for chunk_id in sorted(scores, key=lambda chunk_id: (-scores[chunk_id], int(chunk_id)))
    ]
    order = order[:limit]
    chunks = ReferenceChunk.objects.select_related("document").in_bulk(order)
    return [
        Passage(
            stored_email_id=f"{PREFIX}{chunk_id}",
            account_id=account_id,
            account_display_name="",
            folder_alias=FOLDER,
            subject=chunks[chunk_id].document.title,
            received_at=chunks[chunk_id].document.uploaded_at,
            extract=chunks[chunk_id].text[:max_characters],
        )
        for chunk_id in order
        if chunk_id in chunks
    ]

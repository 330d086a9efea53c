"""Reference documents: stored whole, cut into chunks, indexed and embedded like mail.

An operator uploads them per account in admin (a price list, a policy, an FAQ); reply
drafting searches them only while its rerank pass is on (answering.drafting.references).
Each chunk is at most CHUNK_CHARACTERS, cut at paragraph breaks where the text has them.
Its lexical index is a generated column; its vector is made now when the configured
embedder's space is the active profile's, and a chunk the provider could not embed (or
uploaded before any profile existed) is found lexically until it is stored again.
Nothing of a document's text is logged: counts and ids only.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass

from django.db import transaction

from accounts.models import MailAccount
from answering.models import ReferenceChunk, ReferenceDocument
from mailbox.services import embedding
from mailfathom.providers import get_embedder
from mailfathom.providers.errors import ProviderError

logger = logging.getLogger(__name__)

CHUNK_CHARACTERS = 1200
MAX_DOCUMENT_CHARACTERS = 1_000_000
_PARAGRAPHS = re.compile(r"\n\s*\n")


def chunks_of(text: str, size: int = CHUNK_CHARACTERS) -> list[str]:
    """`text` in pieces of at most `size` characters, whole paragraphs where they fit."""
    pieces: list[str] = []
    current = ""
    for paragraph in (part.strip() for part in _PARAGRAPHS.split(text)):
        if not paragraph:
            continue
        while len(paragraph) > size:
            cut = paragraph.rfind(" ", 0, size)
            cut = cut if cut > size // 2 else size
            if current:
                pieces.append(current)
                current = ""
            pieces.append(paragraph[:cut].strip())
            paragraph = paragraph[cut:].strip()
        if current and len(current) + 2 + len(paragraph) > size:
            pieces.append(current)
            current = ""
        current = f"{current}\n\n{paragraph}" if current else paragraph
    if current:
        pieces.append(current)
    return pieces


@dataclass(frozen=True)
class Source:
    """The file a document's text was read from (answering.services.reference_uploads)."""

    file_name: str
    media_type: str
    outcome: str
    characters: int


def store_reference_document(
    account: MailAccount,
    title: str,
    text: str,
    document: ReferenceDocument | None = None,
    source: Source | None = None,
) -> ReferenceDocument:
    """Store (or replace the text of) one document: its chunks rebuilt, then embedded.

    `source` is the file the text was read from; None records none (the text was pasted).
    """
    if len(text) > MAX_DOCUMENT_CHARACTERS:
        raise ValueError(f"a reference document holds at most {MAX_DOCUMENT_CHARACTERS} characters")
    with transaction.atomic():
        if document is None:
            document = ReferenceDocument(account=account)
        else:
            document.chunks.all().delete()
        document.account, document.title, document.text = account, title, text
        _record_source(document, source)
        document.save()
        ReferenceChunk.objects.bulk_create(
            ReferenceChunk(document=document, position=position, text=piece)
            for position, piece in enumerate(chunks_of(text))
        )
    embedded = embed_chunks(document)
    logger.info(
        "reference document stored: id=%s chunks=%d embedded=%d",
        document.pk,
        document.chunks.count(),
        embedded,
    )
    return document


def source_of(document: ReferenceDocument) -> Source | None:
    """The source `document` records, or None for pasted text."""
    if not document.source_outcome:
        return None
    return Source(
        document.source_file_name,
        document.source_media_type,
        document.source_outcome,
        document.source_characters or 0,
    )


def _record_source(document: ReferenceDocument, source: Source | None) -> None:
    document.source_file_name = source.file_name if source else ""
    document.source_media_type = source.media_type if source else ""
    document.source_outcome = source.outcome if source else ""
    document.source_characters = source.characters if source else None


def embed_chunks(document: ReferenceDocument) -> int:
    """Embed the document's chunks under the active profile; how many were embedded."""
    embedder = get_embedder()
    if embedder is None or not embedding.profile_matches():
        return 0
    profile = embedding.active_profile()
    chunks = list(document.chunks.filter(profile__isnull=True).order_by("position"))
    done = 0
    for start in range(0, len(chunks), max(1, embedder.max_batch)):
        batch = chunks[start : start + embedder.max_batch]
        try:
            vectors = embedder.embed_passages([f"{document.title}\n\n{chunk.text}" for chunk in batch])
        except ProviderError as error:
            logger.info("reference chunks not embedded (%s): they are found lexically", error.kind)
            return done
        for chunk, vector in zip(batch, vectors, strict=True):
            chunk.profile, chunk.embedding = profile, vector
        ReferenceChunk.objects.bulk_update(batch, ["profile", "embedding"])
        done += len(batch)
    return done

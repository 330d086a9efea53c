"""A reference document's text read from an uploaded file, never parsed in the web process.

The file goes to mailbox.extraction, which reads it in a limited child process, under the
same settings as attachments: MAILFATHOM_ATTACHMENT_TEXT_KINDS says which kinds are read
and MAILFATHOM_ATTACHMENT_TEXT_MAX_BYTES how large a file may be (a larger one is refused
before a byte of it is read). Every way the text cannot be had is one MailFathomError,
63009, whose sentence says why in plain words. The file name is untrusted: it is cut to
its last path component and cleared of control and formatting characters before it is
shown, stored or used as a title. Nothing of the file's name or text is logged.
"""

from __future__ import annotations

import logging
import re
import unicodedata
from dataclasses import dataclass
from typing import Protocol

from django.conf import settings

from answering.services.reference_documents import MAX_DOCUMENT_CHARACTERS, Source
from mailbox.extraction import Extracted, ExtractionLimits, Outcome, extract_text
from mailbox.services.attachment_text import enabled_kinds
from mailfathom.core.errors import Code, MailFathomError

logger = logging.getLogger(__name__)

FILE_NAME_CHARACTERS = 200  # a title holds 200 (ReferenceDocument.title)
MEDIA_TYPE_CHARACTERS = 100
UNNAMED = "Uploaded document"
_MEDIA_TYPE = re.compile(r"[a-z0-9][a-z0-9!#$&^_.+-]*/[a-z0-9][a-z0-9!#$&^_.+-]*")

# What an outcome means to the person who uploaded the file.
_REASONS = {
    Outcome.TOO_LARGE: (
        "it is too large to read (its pages, or what it unpacks to, are over the limits "
        "attachment text is read under)."
    ),
    Outcome.ENCRYPTED: "it is encrypted (a password is needed to open it); upload a copy saved without one.",
    Outcome.UNREADABLE: "it is unreadable: damaged, or not the kind of file its name and type say.",
    Outcome.TIMED_OUT: "it timed out: reading it took longer than attachment text is allowed.",
}


class Upload(Protocol):
    """What is needed of an uploaded file (Django's UploadedFile has it)."""

    name: str | None
    size: int | None
    content_type: str | None

    def read(self) -> bytes: ...


@dataclass(frozen=True)
class FileText:
    """The text read from one file, and where it came from."""

    text: str
    source: Source


def read_upload(upload: Upload) -> FileText:
    """The text of `upload`, or MailFathomError 63009 saying why there is none to store.

    Edge cases: a file over the size setting is refused before it is read; a file that is
    read but holds no text (a scanned PDF where Tesseract is not installed) and one whose text is longer
    than a document holds are refused too, rather than stored empty or cut.
    """
    file_name = safe_file_name(upload.name or "")
    media_type = safe_media_type(upload.content_type or "")
    max_bytes = settings.MAILFATHOM.attachment_text_max_bytes
    if (upload.size or 0) > max_bytes:
        raise _refused(
            f"it is too large ({upload.size:,} bytes; at most {max_bytes:,} are read, "
            "MAILFATHOM_ATTACHMENT_TEXT_MAX_BYTES)."
        )
    extracted = extract_text(
        upload.read(),
        media_type,
        file_name,
        kinds=enabled_kinds(),
        max_bytes=max_bytes,
        limits=ExtractionLimits(max_characters=MAX_DOCUMENT_CHARACTERS),
    )
    # Counts and short codes only: never the name or the text.
    logger.info(
        "reference upload read: outcome=%s detail=%s characters=%d seconds=%.2f",
        extracted.outcome.value,
        extracted.detail,
        len(extracted.text),
        extracted.seconds,
    )
    text = extracted.text.strip()
    if extracted.outcome is not Outcome.OK:
        raise _refused(_reason(extracted))
    if extracted.truncated:
        raise _refused(
            f"it is too large: its text is longer than the {MAX_DOCUMENT_CHARACTERS:,} characters "
            "a document holds."
        )
    if not text:
        raise _refused("it holds no text to read (a scanned page is an image: text is not recognised in it).")
    return FileText(text, Source(file_name, media_type, extracted.outcome.value, len(text)))


def _reason(extracted: Extracted) -> str:
    if extracted.outcome is Outcome.UNSUPPORTED:
        if extracted.detail.endswith("-off"):
            return (
                "it is unsupported here: reading this kind of file is switched off "
                "(MAILFATHOM_ATTACHMENT_TEXT_KINDS)."
            )
        return (
            "it is unsupported: MailFathom reads PDF, Word (DOCX), Excel (XLSX), PowerPoint (PPTX), "
            "OpenDocument, RTF, HTML, CSV, plain text and e-mail (.eml) files."
        )
    return _REASONS[extracted.outcome]


def _refused(reason: str) -> MailFathomError:
    return MailFathomError(Code.REFERENCE_FILE_NOT_READ, Code.REFERENCE_FILE_NOT_READ.message(reason=reason))


def safe_file_name(raw: str, limit: int = FILE_NAME_CHARACTERS) -> str:
    """`raw` fit to show and store: its last path component, without control or format characters.

    Edge cases: both separators count (a Windows path arrives whole from some browsers); NUL,
    other controls and bidirectional overrides (which make "fdp.exe" read as "exe.pdf") go;
    runs of white space become one space; a name of only dots is no name; a name over
    `limit` is cut in its stem so the extension still says what it was. An empty result is
    UNNAMED.
    """
    last = re.split(r"[/\\]", raw)[-1]
    # White space (tabs, newlines) becomes a space; every other control, format (the
    # bidirectional overrides, zero-width characters), surrogate or unassigned character goes.
    kept = "".join(
        " " if ch.isspace() else ch for ch in last if ch.isspace() or unicodedata.category(ch)[0] != "C"
    )
    name = " ".join(unicodedata.normalize("NFC", kept).split()).strip(" .")
    if not name:
        return UNNAMED
    if len(name) > limit:
        stem, dot, extension = name.rpartition(".")
        if stem and dot and len(extension) <= 10:
            name = stem[: limit - len(extension) - 1].rstrip(" .") + "." + extension
        else:
            name = name[:limit].rstrip(" .")
    return name


def safe_media_type(raw: str) -> str:
    """The declared media type when it looks like one (type/subtype, parameters dropped), else ""."""
    declared = raw.split(";", 1)[0].strip().lower()[:MEDIA_TYPE_CHARACTERS]
    return declared if _MEDIA_TYPE.fullmatch(declared) else ""

"""Which reader an attachment goes to, judged by its declared media type and then its name.

Mail often declares application/octet-stream for everything, so a known extension stands in
when the media type says nothing more specific. A kind that is named here but switched off by
MAILFATHOM_ATTACHMENT_TEXT_KINDS, or no kind at all, ends as "unsupported".
"""

from __future__ import annotations

from enum import StrEnum


class Kind(StrEnum):
    PDF = "pdf"
    DOCX = "docx"
    XLSX = "xlsx"
    PPTX = "pptx"
    ODT = "odt"
    ODS = "ods"
    ODP = "odp"
    RTF = "rtf"
    HTML = "html"
    CSV = "csv"
    TEXT = "text"
    MESSAGE = "message"
    IMAGE = "image"  # read by OCR, where Tesseract is installed


ALL_KINDS: tuple[str, ...] = tuple(kind.value for kind in Kind)

_BY_MEDIA_TYPE = {
    "application/pdf": Kind.PDF,
    "application/x-pdf": Kind.PDF,
    "application/vnd.openxmlformats-officedocument.wordprocessingml.document": Kind.DOCX,
    "application/vnd.ms-word.document.macroenabled.12": Kind.DOCX,
    "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet": Kind.XLSX,
    "application/vnd.ms-excel.sheet.macroenabled.12": Kind.XLSX,
    "application/vnd.openxmlformats-officedocument.presentationml.presentation": Kind.PPTX,
    "application/vnd.ms-powerpoint.presentation.macroenabled.12": Kind.PPTX,
    "application/vnd.oasis.opendocument.text": Kind.ODT,
    "application/vnd.oasis.opendocument.spreadsheet": Kind.ODS,
    "application/vnd.oasis.opendocument.presentation": Kind.ODP,
    "application/rtf": Kind.RTF,
    "text/rtf": Kind.RTF,
    "text/html": Kind.HTML,
    # RFC 1341's richtext and RFC 1896's enriched text are tags around text, not RTF: the HTML
    # reader drops the tags.
    "text/richtext": Kind.HTML,
    "text/enriched": Kind.HTML,
    "application/xhtml+xml": Kind.HTML,
    "text/csv": Kind.CSV,
    "text/comma-separated-values": Kind.CSV,
    "text/tab-separated-values": Kind.CSV,
    "text/plain": Kind.TEXT,
    "text/markdown": Kind.TEXT,
    "message/rfc822": Kind.MESSAGE,
    "message/global": Kind.MESSAGE,
    "image/png": Kind.IMAGE,
    "image/jpeg": Kind.IMAGE,
    "image/jpg": Kind.IMAGE,
    "image/pjpeg": Kind.IMAGE,
    "image/tiff": Kind.IMAGE,
    "image/gif": Kind.IMAGE,
    "image/bmp": Kind.IMAGE,
    "image/x-bmp": Kind.IMAGE,
    "image/x-ms-bmp": Kind.IMAGE,
    "image/webp": Kind.IMAGE,
}

_BY_EXTENSION = {
    "pdf": Kind.PDF,
    "docx": Kind.DOCX,
    "docm": Kind.DOCX,
    "xlsx": Kind.XLSX,
    "xlsm": Kind.XLSX,
    "pptx": Kind.PPTX,
    "pptm": Kind.PPTX,
    "odt": Kind.ODT,
    "ods": Kind.ODS,
    "odp": Kind.ODP,
    "rtf": Kind.RTF,
    "htm": Kind.HTML,
    "html": Kind.HTML,
    "csv": Kind.CSV,
    "tsv": Kind.CSV,
    "txt": Kind.TEXT,
    "text": Kind.TEXT,
    "md": Kind.TEXT,
    "log": Kind.TEXT,
    "eml": Kind.MESSAGE,
    "png": Kind.IMAGE,
    "jpg": Kind.IMAGE,
    "jpeg": Kind.IMAGE,
    "jpe": Kind.IMAGE,
    "tif": Kind.IMAGE,
    "tiff": Kind.IMAGE,
    "gif": Kind.IMAGE,
    "bmp": Kind.IMAGE,
    "webp": Kind.IMAGE,
}

# Declared types that say nothing about the content: the file name decides.
_UNINFORMATIVE = frozenset({"application/octet-stream", "application/binary", "application/x-download", ""})


def kind_of(media_type: str, file_name: str) -> Kind | None:
    """Return the reader's kind for an attachment, or None when no reader takes it.

    Edge cases: the media type wins when it names a kind; an uninformative one (octet-stream)
    defers to the extension, compared without regard to case; any other media type with an
    extension we read (a PDF sent as application/x-whatever) also defers to the extension.
    """
    declared = media_type.strip().lower()
    by_type = _BY_MEDIA_TYPE.get(declared)
    if by_type is not None:
        return by_type
    _, dot, extension = file_name.rpartition(".")
    by_name = _BY_EXTENSION.get(extension.lower()) if dot else None
    if by_name is not None and (declared in _UNINFORMATIVE or declared.startswith("application/")):
        return by_name
    return None

"""Readers of PDF, RTF, HTML, CSV, plain text and attached messages, and the table of readers.

Run only inside the child process (mailbox.extraction.child). A reader writes text into a
Sink and raises a sink.ExtractionFailure for every outcome but ok; anything else it
raises is read as unreadable.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Callable

from mailbox.extraction import images, office
from mailbox.extraction.kinds import Kind, kind_of
from mailbox.extraction.outcome import ExtractionLimits
from mailbox.extraction.sink import Encrypted, Sink, TooLarge, Unreadable
from mailbox.parsing import attachment_bytes, parse_message
from mailbox.parsing.decoding import decode_text
from mailbox.parsing.htmltext import html_to_text
from mailbox.parsing.message import clean_text

Reader = Callable[[bytes, ExtractionLimits, Sink], None]

# PDFium's FPDF_GetLastError codes that mean "this is not a PDF we can read".
_PDFIUM_PASSWORD = 4
_PDFIUM_SECURITY = 5


def read_pdf(data: bytes, limits: ExtractionLimits, sink: Sink) -> None:
    """The text layer, page by page; a scanned page (an image, no text) is rendered for OCR.

    Edge cases: a password-protected file is encrypted (one with only an owner password
    opens and is read, as every viewer does); more pages than max_pages is too_large,
    decided from the page count before any page is read; a page with neither text nor an
    image (a blank one, or text drawn as outlines) gives nothing.
    """
    import pypdfium2 as pdfium

    try:
        document = pdfium.PdfDocument(data)
    except pdfium.PdfiumError as error:
        if getattr(error, "err_code", None) in (_PDFIUM_PASSWORD, _PDFIUM_SECURITY):
            raise Encrypted("pdf-password") from error
        raise Unreadable("pdf") from error
    try:
        if len(document) > limits.max_pages:
            raise TooLarge("pages")
        for index in range(len(document)):
            if sink.full:
                sink.truncated = True
                return
            page = document[index]
            textpage = page.get_textpage()
            try:
                text = clean_text(textpage.get_text_bounded())
                if text.strip():
                    sink.line(text)
                elif images.has_image(page):
                    images.scan_page(page, limits, sink)
            finally:
                textpage.close()
                page.close()
    finally:
        document.close()


def read_rtf(data: bytes, limits: ExtractionLimits, sink: Sink) -> None:
    """RTF's text with its control words removed; embedded objects are skipped, never opened."""
    from striprtf.striprtf import rtf_to_text

    # RTF is 7-bit with escapes for the rest; cp1252 maps every byte, so decoding never fails.
    markup = data[: limits.max_characters * 8].decode("cp1252")
    if not markup.lstrip().startswith("{\\rtf"):
        raise Unreadable("rtf")
    sink.add(clean_text(rtf_to_text(markup, errors="ignore")))


def read_html(data: bytes, limits: ExtractionLimits, sink: Sink) -> None:
    """The visible text, through the same converter as HTML mail bodies."""
    markup, _ = decode_text(data[: limits.max_characters * 16], None, final=True)
    sink.add(html_to_text(clean_text(markup), limits.max_characters))


def read_text(data: bytes, limits: ExtractionLimits, sink: Sink) -> None:
    """Plain text, its charset detected as mail bodies' are."""
    cut = len(data) > limits.max_characters * 4
    text, _ = decode_text(data[: limits.max_characters * 4], None, final=not cut)
    sink.add(clean_text(text))
    if cut:
        sink.truncated = True


def read_csv(data: bytes, limits: ExtractionLimits, sink: Sink) -> None:
    """Rows with their cells tab-separated, whatever delimiter the file used."""
    cut = len(data) > limits.max_characters * 4
    text, _ = decode_text(data[: limits.max_characters * 4], None, final=not cut)
    sample = text[:8192]
    try:
        dialect: type[csv.Dialect] | csv.Dialect = csv.Sniffer().sniff(sample, delimiters=",;\t|")
    except csv.Error:
        dialect = csv.excel
    csv.field_size_limit(limits.max_characters)
    try:
        for row in csv.reader(io.StringIO(clean_text(text)), dialect):
            if sink.full:
                break
            sink.line("\t".join(row))
    except csv.Error as error:
        raise Unreadable("csv") from error
    if cut:
        sink.truncated = True


def read_message(data: bytes, limits: ExtractionLimits, sink: Sink, depth: int = 0) -> None:
    """An attached message: its subject, body, and its own attachments' text, to a bounded depth.

    Edge cases: attachments nested deeper than max_message_depth are named but not read;
    an inner attachment's failure is written as its outcome beside its name and never ends
    the outer message.
    """
    parsed = parse_message(data)
    sink.line(f"Subject: {parsed.subject}")
    sink.line(parsed.text_body)
    for info in parsed.attachments:
        if sink.full:
            return
        sink.line(f"[{info.file_name or 'attachment'}]")
        kind = kind_of(info.media_type, info.file_name)
        if kind is None:
            continue
        if kind is Kind.MESSAGE and depth + 1 >= limits.max_message_depth:
            sink.line("(not read: nested too deep)")
            continue
        inner = attachment_bytes(data, info.part_index)
        if inner is None:
            continue
        try:
            if kind is Kind.MESSAGE:
                read_message(inner, limits, sink, depth + 1)
            else:
                READERS[kind](inner, limits, sink)
        except (TooLarge, Encrypted, Unreadable) as failure:
            sink.line(f"(not read: {failure.outcome})")


READERS: dict[Kind, Reader] = {
    Kind.PDF: read_pdf,
    Kind.DOCX: office.read_docx,
    Kind.XLSX: office.read_xlsx,
    Kind.PPTX: office.read_pptx,
    Kind.ODT: office.read_opendocument,
    Kind.ODS: office.read_opendocument,
    Kind.ODP: office.read_opendocument,
    Kind.RTF: read_rtf,
    Kind.HTML: read_html,
    Kind.CSV: read_csv,
    Kind.TEXT: read_text,
    Kind.MESSAGE: read_message,
    Kind.IMAGE: images.read_image,
}

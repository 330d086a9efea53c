"""Readers of the zip-based office formats: OOXML (DOCX, XLSX, PPTX) and OpenDocument.

Each opens the file through guards.checked_zip first, so a library only ever sees a
container whose sizes are bounded and whose XML declares no DTD. python-docx and
python-pptx parse with lxml with entity resolution off; openpyxl parses through defusedxml
when it is installed (it is). No reader evaluates formulas, follows links or runs macros:
they read the XML text and nothing else.
"""

from __future__ import annotations

import io
from xml.etree.ElementTree import Element  # the type only; parsing is defusedxml's

from defusedxml import ElementTree as SafeTree

from mailbox.extraction.guards import checked_zip, read_member
from mailbox.extraction.outcome import ExtractionLimits
from mailbox.extraction.sink import Sink, TooLarge, Unreadable


def read_docx(data: bytes, limits: ExtractionLimits, sink: Sink) -> None:
    """Body paragraphs and tables in document order, then headers and footers."""
    checked_zip(data, limits)
    import docx
    from docx.table import Table

    document = docx.Document(io.BytesIO(data))
    for block in document.iter_inner_content():
        if sink.full:
            return
        if isinstance(block, Table):
            _docx_table(block, sink)
        else:
            sink.line(block.text)
    for section in document.sections:
        for part in (section.header, section.footer):
            if not part.is_linked_to_previous:
                for paragraph in part.paragraphs:
                    sink.line(paragraph.text)


def _docx_table(table: object, sink: Sink) -> None:
    from docx.table import Table

    assert isinstance(table, Table)
    for row in table.rows:
        if sink.full:
            return
        sink.line("\t".join(cell.text for cell in row.cells))


def read_xlsx(data: bytes, limits: ExtractionLimits, sink: Sink) -> None:
    """Each sheet's cell values row by row, tab-separated, under the sheet's title.

    Values are what the file stored (data_only): formulas are never evaluated.
    """
    checked_zip(data, limits)
    import openpyxl

    workbook = openpyxl.load_workbook(io.BytesIO(data), read_only=True, data_only=True, keep_links=False)
    cells = 0
    try:
        for sheet in workbook.worksheets:
            sink.line(f"# {sheet.title}")
            for row in sheet.iter_rows(values_only=True):
                cells += len(row)
                if cells > limits.max_cells:
                    raise TooLarge("cells")
                if sink.full:
                    return
                sink.line("\t".join("" if value is None else str(value) for value in row).rstrip("\t"))
    finally:
        workbook.close()


def read_pptx(data: bytes, limits: ExtractionLimits, sink: Sink) -> None:
    """Each slide's text frames and tables, then its notes."""
    checked_zip(data, limits)
    import pptx

    presentation = pptx.Presentation(io.BytesIO(data))
    for slide in presentation.slides:
        if sink.full:
            return
        for shape in slide.shapes:
            if shape.has_text_frame:
                sink.line(shape.text_frame.text)
            if getattr(shape, "has_table", False) and shape.has_table:
                for row in shape.table.rows:
                    sink.line("\t".join(cell.text for cell in row.cells))
        if slide.has_notes_slide and slide.notes_slide.notes_text_frame is not None:
            sink.line(slide.notes_slide.notes_text_frame.text)


_TEXT_NS = "urn:oasis:names:tc:opendocument:xmlns:text:1.0"
_BREAKS = {f"{{{_TEXT_NS}}}p", f"{{{_TEXT_NS}}}h"}
_SPACES = {f"{{{_TEXT_NS}}}s": " ", f"{{{_TEXT_NS}}}tab": "\t", f"{{{_TEXT_NS}}}line-break": "\n"}


def read_opendocument(data: bytes, limits: ExtractionLimits, sink: Sink) -> None:
    """The text of content.xml (ODT, ODS and ODP alike): paragraphs and headings as lines."""
    archive = checked_zip(data, limits)
    if "content.xml" not in archive.namelist():
        raise Unreadable("odf-no-content")
    xml = read_member(archive, "content.xml")
    try:
        root = SafeTree.fromstring(xml, forbid_dtd=True, forbid_entities=True, forbid_external=True)
    except Exception as error:  # defusedxml's refusals and expat's ParseError alike
        raise Unreadable("xml") from error
    _walk_opendocument(root, sink)


def _walk_opendocument(root: Element, sink: Sink) -> None:
    """Emit text in document order with an explicit stack (nesting depth costs no recursion)."""
    line: list[str] = []
    stack: list[tuple[Element, bool]] = [(root, False)]
    while stack and not sink.full:
        element, closing = stack.pop()
        if closing:
            if element.tag in _BREAKS:
                sink.line("".join(line))
                line.clear()
            if element.tail:
                line.append(element.tail)
            continue
        if element.tag in _SPACES:
            line.append(_SPACES[element.tag])
        elif element.text:
            line.append(element.text)
        stack.append((element, True))
        stack.extend((child, False) for child in reversed(list(element)))
    sink.line("".join(line))

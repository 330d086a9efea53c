"""The text of the images a child returned, read by Tesseract and put where each image was.

A child answers with its text and the images it wants read (scanned PDF pages, image
attachments, each with the place in the text it belongs). Each is read in turn by its own
OCR process under the attachment's limits and deadline, so a PDF's pages keep their order
whichever of them had a text layer. Pages that OCR did not read (past the page or byte
bound, out of time, or failed) make the text truncated, and the detail says why.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from mailbox.extraction.outcome import Extracted, ExtractionLimits, Outcome
from mailbox.extraction.sink import Scan
from mailbox.extraction.tesseract import Engine, recognize

_TIMED_OUT = ("wall-clock", "cpu-time")


@dataclass(frozen=True)
class Scans:
    """The images of one child's answer, and how many it did not return (over a bound, or OCR off)."""

    images: list[Scan]
    skipped: int


def read_scans(
    extracted: Extracted, scans: Scans, engine: Engine | None, limits: ExtractionLimits, deadline: float
) -> Extracted:
    """The child's ok answer with the OCR text of its images put in.

    Edge cases: without an engine the text is left as it is, detail "ocr-absent"; an
    attachment that gives no text at all because its OCR ran out of time or failed takes
    that outcome (timed_out, unreadable), one with any text stays ok and truncated.
    """
    if engine is None:
        return dataclasses.replace(extracted, detail="ocr-absent")
    placed: list[tuple[int, str]] = []
    failure = ""
    for scan in scans.images:
        recognized = recognize(engine, scan.png, scan.dpi, limits, deadline)
        if recognized.ended in _TIMED_OUT:
            failure = recognized.ended
            break  # the deadline is shared: later images would not fare better
        if recognized.ended not in ("ok", "overflow"):
            failure = failure or recognized.ended
            continue
        placed.append((scan.offset, recognized.text))
    text, cut = _merged(extracted.text, placed, limits.max_characters)
    if failure and not text.strip():
        if failure in _TIMED_OUT:
            return Extracted(Outcome.TIMED_OUT, detail=f"ocr-{failure}")
        return Extracted(Outcome.UNREADABLE, detail=f"ocr-{failure}")
    if failure:
        detail = "ocr-time" if failure in _TIMED_OUT else "ocr-failed"
    else:
        detail = "ocr-pages" if scans.skipped else "ocr"
    truncated = extracted.truncated or cut or bool(failure) or scans.skipped > 0
    return dataclasses.replace(extracted, text=text, truncated=truncated, detail=detail)


def _merged(text: str, placed: list[tuple[int, str]], max_characters: int) -> tuple[str, bool]:
    """text with each OCR text inserted, as a line of its own, at its offset; cut to max_characters."""
    pieces: list[str] = []
    start = 0
    for offset, ocr_text in sorted(placed, key=lambda item: item[0]):
        pieces.append(text[start:offset])
        if ocr_text:
            pieces.append(ocr_text + "\n")
        start = offset
    pieces.append(text[start:])
    merged = "".join(pieces)
    return merged[:max_characters], len(merged) > max_characters

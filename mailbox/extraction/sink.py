"""What a reader hands back: text and images for OCR in a bounded Sink, or a verdict it raises."""

from __future__ import annotations

from dataclasses import dataclass


class ExtractionFailure(Exception):
    """A reader's verdict: outcome and a short code; never the file's content."""

    outcome = "unreadable"

    def __init__(self, detail: str) -> None:
        super().__init__(detail)
        self.detail = detail


class TooLarge(ExtractionFailure):
    outcome = "too_large"


class Encrypted(ExtractionFailure):
    outcome = "encrypted"


class Unreadable(ExtractionFailure):
    outcome = "unreadable"


@dataclass(frozen=True)
class Scan:
    """An image for OCR (a grayscale PNG this process wrote) and where its text goes."""

    offset: int  # characters of the sink's text before it
    png: bytes
    dpi: int  # 0 when unknown: Tesseract then estimates it


class Sink:
    """Collect text up to max_characters, and images for OCR up to a page and a byte bound.

    Later text is dropped and `truncated` set. An image past the OCR bounds, or any image
    when OCR is off (scan_pages 0), is not kept but counted in `skipped_scans`.
    """

    def __init__(self, max_characters: int, scan_pages: int = 0, scan_bytes: int = 0) -> None:
        self.max_characters = max_characters
        self.pieces: list[str] = []
        self.size = 0
        self.truncated = False
        self.scans: list[Scan] = []
        self.skipped_scans = 0
        self.scan_pages = scan_pages
        self.scan_bytes = scan_bytes

    @property
    def full(self) -> bool:
        return self.size >= self.max_characters

    def wants_scan(self) -> bool:
        """Whether one more image would be kept; when not, it is counted as skipped."""
        if len(self.scans) < self.scan_pages and not self.full:
            return True
        self.skipped_scans += 1
        return False

    def scan(self, png: bytes, dpi: int) -> None:
        """Keep an image for OCR at the current end of the text, within the byte bound."""
        if sum(len(scan.png) for scan in self.scans) + len(png) > self.scan_bytes:
            self.skipped_scans += 1
            return
        self.scans.append(Scan(self.size, png, dpi))

    def add(self, text: str) -> None:
        if not text:
            return
        room = self.max_characters - self.size
        if room <= 0:
            self.truncated = True
            return
        if len(text) > room:
            text = text[:room]
            self.truncated = True
        self.pieces.append(text)
        self.size += len(text)

    def line(self, text: str) -> None:
        """Add text as a line of its own (blank text adds nothing)."""
        if text.strip():
            self.add(text.rstrip() + "\n")

    def text(self) -> str:
        return "".join(self.pieces)

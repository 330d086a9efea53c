"""Checks a file passes before a library reads it: zip containers, XML, and the output sink.

Office files are zip containers of XML. Before any library opens one, every member's
declared size is checked (each, in sum, and against its compressed size), and every XML
member is refused if it declares a DTD: no OOXML or ODF part needs one, and a DTD is how
entity expansion (billion laughs) and external entities (XXE) get in. While a library
reads, Python's zipfile never returns more than a member's declared size, so a header that
lies ends in a CRC error, not in unbounded output.
"""

from __future__ import annotations

import io
import zipfile
from dataclasses import dataclass

from mailbox.extraction.outcome import ExtractionLimits

_OLE_MAGIC = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"
_DTD_MARKERS = tuple(
    marker.encode(codec)
    for marker in ("<!DOCTYPE", "<!ENTITY")
    for codec in ("utf-8", "utf-16-le", "utf-16-be")
)
_RATIO_FLOOR_BYTES = 1024 * 1024
_XML_SUFFIXES = (".xml", ".rels", ".vml")


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


def checked_zip(data: bytes, limits: ExtractionLimits) -> zipfile.ZipFile:
    """Open data as a zip container after checking every member's declared size and XML.

    Edge cases: an OLE file where a zip was expected is an encrypted Office document (Office
    wraps the encrypted package in OLE); a member that is too large, or compressed beyond
    the ratio bound, makes the whole file too_large; a DTD in any XML member makes it
    unreadable ("xml-dtd").
    """
    if data.startswith(_OLE_MAGIC):
        raise Encrypted("office-encrypted")
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
        members = archive.infolist()
    except (zipfile.BadZipFile, ValueError, OSError) as error:
        raise Unreadable("not-a-zip") from error
    if len(members) > limits.max_zip_members:
        raise TooLarge("zip-members")
    total = 0
    for member in members:
        if member.flag_bits & 0x1:
            raise Encrypted("zip-encrypted")
        if member.file_size > limits.max_member_bytes:
            raise TooLarge("zip-member-size")
        ratio_bound = max(member.compress_size, 1) * limits.max_compression_ratio
        if member.file_size > _RATIO_FLOOR_BYTES and member.file_size > ratio_bound:
            raise TooLarge("zip-ratio")
        total += member.file_size
        if total > limits.max_unpacked_bytes:
            raise TooLarge("zip-unpacked-size")
    for member in members:
        if member.filename.lower().endswith(_XML_SUFFIXES):
            refuse_dtd(read_member(archive, member.filename))
    return archive


def read_member(archive: zipfile.ZipFile, name: str) -> bytes:
    """Read one member whole (its declared size was bounded by checked_zip)."""
    try:
        return archive.read(name)
    except (zipfile.BadZipFile, KeyError, ValueError, OSError, EOFError) as error:
        raise Unreadable("zip-member") from error
    except RuntimeError as error:  # zipfile's "password required"
        raise Encrypted("zip-encrypted") from error


def refuse_dtd(xml: bytes) -> None:
    """Refuse XML that declares a document type or an entity, in UTF-8 or UTF-16."""
    if any(marker in xml for marker in _DTD_MARKERS):
        raise Unreadable("xml-dtd")

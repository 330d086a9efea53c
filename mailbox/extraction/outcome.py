"""What one extraction ends as, and the limits it runs under."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

# Raised when a reader changes what it returns for the same bytes (a new library, a reader
# that reads more), so stored text can be told from text the engine would extract now.
ENGINE_VERSION = 1


class Outcome(StrEnum):
    OK = "ok"
    TOO_LARGE = "too_large"  # over the size, page, unpacked-size or memory bound
    ENCRYPTED = "encrypted"  # a password is needed to read it
    UNREADABLE = "unreadable"  # malformed, refused (an XML DTD) or the reader failed
    TIMED_OUT = "timed_out"  # over the CPU-time or wall-clock bound
    UNSUPPORTED = "unsupported"  # no reader for its kind, the kind is switched off, or no OCR for an image


@dataclass(frozen=True)
class ExtractionLimits:
    """Bound what one attachment may cost; the child process is held to them by the kernel.

    memory_bytes is the child's whole address space (RLIMIT_AS), the interpreter and the
    libraries included; cpu_seconds is RLIMIT_CPU; wall_seconds is enforced by the parent,
    which kills the child's process group, and it is also the deadline of every OCR process
    the attachment needs. max_characters caps the text kept.
    """

    memory_bytes: int = 1024 * 1024 * 1024
    cpu_seconds: int = 20
    wall_seconds: float = 30.0
    max_characters: int = 1_000_000
    max_pages: int = 1000
    max_unpacked_bytes: int = 200 * 1024 * 1024  # sum of a zip container's declared member sizes
    max_member_bytes: int = 100 * 1024 * 1024  # one member of a zip container, declared
    max_compression_ratio: int = 200  # declared over compressed size, for members over 1 MiB
    max_zip_members: int = 10_000
    max_message_depth: int = 3  # attached messages inside attached messages
    max_cells: int = 2_000_000  # spreadsheet cells visited
    image_pixels: int = 64_000_000  # the largest image decoded (declared width times height)
    ocr_pixels: int = 12_000_000  # an image handed to OCR is scaled down to this; A4 at 300 dpi is 8.7M
    ocr_dpi: int = 300  # scanned PDF pages are rendered at this resolution, within ocr_pixels
    ocr_pages: int = 20  # pages or images one attachment hands to OCR; later ones are skipped
    ocr_bytes: int = 48 * 1024 * 1024  # their PNG bytes together, as the child returns them


@dataclass(frozen=True)
class Extracted:
    """The outcome, the text (empty unless ok), and a short code saying why, never content."""

    outcome: Outcome
    text: str = ""
    truncated: bool = False
    detail: str = ""
    seconds: float = 0.0

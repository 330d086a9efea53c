"""Tesseract, the OCR engine, run by the parent as a limited process of its own per image.

The extraction child may start no process, so OCR runs from the parent, under the child's kernel
limits (mailbox.extraction.kernel_limits) and the attachment's deadline. Debian's `tesseract`
reads one PNG on stdin, which the child wrote from decoded pixels: Tesseract's own image
decoders never see an attachment's bytes.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass

from mailbox.extraction.outcome import ExtractionLimits
from mailbox.extraction.processes import SAFE_ENV, killed_by_cpu_limit, limited, run_bounded
from mailbox.parsing.message import clean_text

TESSERACT = "/usr/bin/tesseract"  # Debian's tesseract-ocr
# Used where installed (Tesseract refuses a language it lacks). German first: the first is the
# main model, and English words come through under it while umlauts do not under English.
LANGUAGES = ("deu", "eng")
# One thread: the pass reads one attachment at a time, and RLIMIT_CPU counts every thread.
_ENV = {**SAFE_ENV, "OMP_THREAD_LIMIT": "1"}
_PROBE_SECONDS = 10.0
_PROBE_OUTPUT = 65536


@dataclass(frozen=True)
class Engine:
    binary: str
    languages: str  # Tesseract's -l argument, "deu+eng"


@dataclass(frozen=True)
class Recognized:
    """The text of one image, and how its OCR process ended: "ok", or a short code why not."""

    text: str
    ended: str


_found: dict[str, Engine] = {}


def find_engine(binary: str = TESSERACT, limits: ExtractionLimits | None = None) -> Engine | None:
    """The Tesseract at `binary` with those of LANGUAGES it has, or None where there is none.

    Edge cases: a binary that is missing, not executable, fails to list its languages or
    has none of LANGUAGES is None, and asked about again next time (an install takes
    effect without a restart); one that answered is remembered for the process's life.
    """
    if binary in _found:
        return _found[binary]
    if not os.access(binary, os.X_OK):
        return None
    ended = run_bounded(
        limited([binary, "--list-langs"], limits or ExtractionLimits()),
        b"",
        _ENV,
        deadline=time.monotonic() + _PROBE_SECONDS,
        max_output=_PROBE_OUTPUT,
    )
    if ended.how != "closed" or ended.returncode != 0:
        return None
    listed = set(ended.output.decode("utf-8", "replace").split())
    languages = [language for language in LANGUAGES if language in listed]
    if not languages:
        return None
    _found[binary] = Engine(binary, "+".join(languages))
    return _found[binary]


def recognize(engine: Engine, png: bytes, dpi: int, limits: ExtractionLimits, deadline: float) -> Recognized:
    """OCR one PNG by the deadline; the text is cleaned like every extracted text.

    Edge cases: the deadline or the CPU limit ends as "wall-clock" or "cpu-time" with no
    text; output past max_characters is cut ("overflow", the text kept up to the bound);
    any other failure is "exit-N".
    """
    arguments = ["stdin", "stdout", "-l", engine.languages]
    if dpi:
        arguments += ["--dpi", str(dpi)]
    ended = run_bounded(
        limited([engine.binary, *arguments], limits),
        png,
        _ENV,
        deadline=deadline,
        max_output=limits.max_characters * 4,
    )
    if ended.how == "deadline":
        return Recognized("", "wall-clock")
    if ended.how == "closed" and ended.returncode != 0:
        if killed_by_cpu_limit(ended.returncode):
            return Recognized("", "cpu-time")
        return Recognized("", f"exit-{ended.returncode}")
    # Tesseract ends each page with a form feed; blank lines between its blocks stay.
    text = clean_text(ended.output.decode("utf-8", "replace").replace("\f", "\n")).strip()
    return Recognized(text, "ok" if ended.how == "closed" else "overflow")

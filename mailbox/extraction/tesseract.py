"""Tesseract, the OCR engine, run by the parent as a limited process of its own per image.

The extraction child may start no process (its audit hook refuses), so OCR runs from the
parent: Debian's `tesseract` command reads one PNG on stdin and writes text on stdout. It
gets the child's memory and CPU limits, may write no file (RLIMIT_FSIZE 0; stdout is a
pipe, which the limit does not cover, and the parent reads at most a bounded number of
bytes of it), an environment holding no secret, and the attachment's deadline, at which
its process group is killed. The limits are set by a fresh interpreter that then becomes
Tesseract (os.execv), not by a preexec_fn, which is unsafe in a parent with threads. The
PNG it reads was written by the child from decoded pixels, so Tesseract's image decoders
never see an attachment's own bytes.
"""

from __future__ import annotations

import os
import sys
import time
from dataclasses import dataclass

from mailbox.extraction.outcome import ExtractionLimits
from mailbox.extraction.processes import killed_by_cpu_limit, run_bounded
from mailbox.parsing.message import clean_text

TESSERACT = "/usr/bin/tesseract"  # Debian's tesseract-ocr
# Used where installed (Tesseract refuses a language it lacks). German first: the first is the
# main model, and English words come through under it while umlauts do not under English.
LANGUAGES = ("deu", "eng")
# One thread: the pass reads one attachment at a time, and RLIMIT_CPU counts every thread.
_ENV = {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8", "OMP_THREAD_LIMIT": "1"}
_LIMITED_EXEC = (
    "import os, resource, sys\n"
    "memory, cpu = int(sys.argv[1]), int(sys.argv[2])\n"
    "resource.setrlimit(resource.RLIMIT_AS, (memory, memory))\n"
    "resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))\n"
    "resource.setrlimit(resource.RLIMIT_FSIZE, (0, 0))\n"
    "resource.setrlimit(resource.RLIMIT_CORE, (0, 0))\n"
    "os.execv(sys.argv[3], sys.argv[3:])\n"
)
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
        _limited(binary, ["--list-langs"], limits or ExtractionLimits()),
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
        _limited(engine.binary, arguments, limits),
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


def _limited(binary: str, arguments: list[str], limits: ExtractionLimits) -> list[str]:
    return [
        sys.executable,
        "-I",
        "-c",
        _LIMITED_EXEC,
        str(limits.memory_bytes),
        str(limits.cpu_seconds),
        binary,
        *arguments,
    ]

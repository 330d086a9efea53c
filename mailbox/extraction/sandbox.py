"""Run one extraction in a child process and turn every way it can end into an Outcome.

The parent never parses the attachment: it writes the bytes to an unnamed temporary file
the child reads as stdin, reads at most a bounded number of bytes of the child's answer,
and kills the child's whole process group at the wall-clock deadline. A child that crashes,
is killed by its CPU limit or answers nonsense is an outcome like any other, so the worker
calling this goes on with its next attachment. Images the child returns for OCR are read
afterwards, each by a Tesseract process of its own, by the same deadline (mailbox.extraction.ocr).
"""

from __future__ import annotations

import dataclasses
import json
import sys
import time
from collections.abc import Collection
from pathlib import Path

from mailbox.extraction.kinds import Kind, kind_of
from mailbox.extraction.ocr import Scans, read_scans
from mailbox.extraction.outcome import Extracted, ExtractionLimits, Outcome
from mailbox.extraction.processes import SAFE_ENV, killed_by_cpu_limit, run_bounded
from mailbox.extraction.sink import Scan
from mailbox.extraction.tesseract import TESSERACT, Engine, find_engine

_ROOT = Path(__file__).resolve().parents[2]
_CHILD = "import sys; sys.path.insert(0, sys.argv[1]); from mailbox.extraction.child import main; main()"
_ANSWER_OVERHEAD = 4096


def extract_text(
    data: bytes,
    media_type: str,
    file_name: str,
    *,
    kinds: Collection[str],
    max_bytes: int,
    limits: ExtractionLimits | None = None,
    tesseract: str = TESSERACT,
) -> Extracted:
    """Extract the text of one attachment; never raise for anything the file does.

    Edge cases: a kind with no reader, or not among `kinds`, is unsupported and a file over
    `max_bytes` too_large, both decided without starting a child; an empty file is ok with
    no text; an image where `tesseract` is no working Tesseract is unsupported
    ("ocr-absent"), and a scanned PDF page there gives no text (ok, "ocr-absent").
    """
    kind = kind_of(media_type, file_name)
    if kind is None or kind.value not in kinds:
        return Extracted(Outcome.UNSUPPORTED, detail="kind" if kind is None else f"{kind.value}-off")
    if len(data) > max_bytes:
        return Extracted(Outcome.TOO_LARGE, detail="size")
    if not data:
        return Extracted(Outcome.OK)
    limits = limits or ExtractionLimits()
    engine = find_engine(tesseract, limits) if kind in (Kind.PDF, Kind.IMAGE, Kind.MESSAGE) else None
    if kind is Kind.IMAGE and engine is None:
        return Extracted(Outcome.UNSUPPORTED, detail="ocr-absent")
    return run_child(kind, data, limits, engine)


def run_child(kind: Kind, data: bytes, limits: ExtractionLimits, engine: Engine | None = None) -> Extracted:
    """Read `data` as `kind` in a fresh child under `limits`, with OCR by `engine` if one is given."""
    config = json.dumps({"kind": kind.value, "limits": dataclasses.asdict(limits), "ocr": engine is not None})
    started = time.monotonic()
    deadline = started + limits.wall_seconds
    bound = limits.max_characters * 4 + _ANSWER_OVERHEAD + (limits.ocr_bytes if engine else 0)
    ended = run_bounded(
        [sys.executable, "-I", "-c", _CHILD, str(_ROOT), config],
        data,
        SAFE_ENV,
        deadline=deadline,
        max_output=bound,
    )
    if ended.how == "deadline":
        return Extracted(Outcome.TIMED_OUT, detail="wall-clock", seconds=time.monotonic() - started)
    if ended.how == "overflow":
        return Extracted(Outcome.UNREADABLE, detail="answer-too-long", seconds=time.monotonic() - started)
    if killed_by_cpu_limit(ended.returncode):
        return Extracted(Outcome.TIMED_OUT, detail="cpu-time", seconds=time.monotonic() - started)
    if ended.returncode != 0:
        return Extracted(
            Outcome.UNREADABLE, detail=f"exit-{ended.returncode}", seconds=time.monotonic() - started
        )
    extracted, scans = _answer(ended.output)
    if extracted.outcome is Outcome.OK and (scans.images or scans.skipped):
        extracted = read_scans(extracted, scans, engine, limits, deadline)
    return dataclasses.replace(extracted, seconds=time.monotonic() - started)


def _answer(answer: bytes) -> tuple[Extracted, Scans]:
    """The child's JSON line, and the PNG images after it that the line lists."""
    line, _, images = answer.partition(b"\n")
    try:
        reply = json.loads(line)
        outcome = Outcome(reply["outcome"])
        scans = _scans(reply, images) if outcome is Outcome.OK else Scans([], 0)
    except (ValueError, KeyError, TypeError):
        return Extracted(Outcome.UNREADABLE, detail="no-answer"), Scans([], 0)
    extracted = Extracted(
        outcome,
        text=str(reply.get("text", "")) if outcome is Outcome.OK else "",
        truncated=bool(reply.get("truncated", False)),
        detail=str(reply.get("detail", ""))[:64],
    )
    return extracted, scans


def _scans(reply: dict[str, object], images: bytes) -> Scans:
    listed = reply.get("scans", [])
    skipped = reply.get("skipped_scans", 0)
    if not isinstance(listed, list) or not isinstance(skipped, int):
        raise TypeError("scans")
    found: list[Scan] = []
    start = 0
    for offset, size, dpi in listed:
        if not all(isinstance(value, int) and value >= 0 for value in (offset, size, dpi)):
            raise ValueError("scan")
        found.append(Scan(offset, images[start : start + size], dpi))
        start += size
    if start != len(images):
        raise ValueError("scan bytes")
    return Scans(found, skipped)

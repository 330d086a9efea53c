"""Run one extraction in a child process and turn every way it can end into an Outcome.

The parent never parses the attachment: it writes the bytes to an unnamed temporary file
the child reads as stdin, reads at most a bounded number of bytes of the child's answer,
and kills the child's whole process group at the wall-clock deadline. A child that crashes,
is killed by its CPU limit or answers nonsense is an outcome like any other, so the worker
calling this goes on with its next attachment.
"""

from __future__ import annotations

import dataclasses
import json
import os
import selectors
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Collection
from pathlib import Path

from mailbox.extraction.kinds import Kind, kind_of
from mailbox.extraction.outcome import Extracted, ExtractionLimits, Outcome

_ROOT = Path(__file__).resolve().parents[2]
_CHILD = "import sys; sys.path.insert(0, sys.argv[1]); from mailbox.extraction.child import main; main()"
# The child's whole environment: nothing of the parent's (database, Redis, key ring) is passed.
_CHILD_ENV = {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8"}
_READ_CHUNK = 65536
_ANSWER_OVERHEAD = 4096


def extract_text(
    data: bytes,
    media_type: str,
    file_name: str,
    *,
    kinds: Collection[str],
    max_bytes: int,
    limits: ExtractionLimits | None = None,
) -> Extracted:
    """Extract the text of one attachment; never raise for anything the file does.

    Edge cases: a kind with no reader, or not among `kinds`, is unsupported and a file over
    `max_bytes` too_large, both decided without starting a child; an empty file is ok with
    no text.
    """
    kind = kind_of(media_type, file_name)
    if kind is None or kind.value not in kinds:
        return Extracted(Outcome.UNSUPPORTED, detail="kind" if kind is None else f"{kind.value}-off")
    if len(data) > max_bytes:
        return Extracted(Outcome.TOO_LARGE, detail="size")
    if not data:
        return Extracted(Outcome.OK)
    return run_child(kind, data, limits or ExtractionLimits())


def run_child(kind: Kind, data: bytes, limits: ExtractionLimits) -> Extracted:
    """Read `data` as `kind` in a fresh child under `limits`."""
    config = json.dumps({"kind": kind.value, "limits": dataclasses.asdict(limits)})
    started = time.monotonic()
    with tempfile.TemporaryFile() as source:
        source.write(data)
        source.seek(0)
        child = subprocess.Popen(
            [sys.executable, "-I", "-c", _CHILD, str(_ROOT), config],
            stdin=source,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=_CHILD_ENV,
            start_new_session=True,
            close_fds=True,
        )
        try:
            answer, ended = _read_answer(child, started + limits.wall_seconds, limits.max_characters)
        finally:
            _kill_group(child)
            child.wait()
            assert child.stdout is not None
            child.stdout.close()
    seconds = time.monotonic() - started
    if ended == "deadline":
        return Extracted(Outcome.TIMED_OUT, detail="wall-clock", seconds=seconds)
    if ended == "overflow":
        return Extracted(Outcome.UNREADABLE, detail="answer-too-long", seconds=seconds)
    code = child.returncode
    if code in (-signal.SIGXCPU, -signal.SIGKILL):
        return Extracted(Outcome.TIMED_OUT, detail="cpu-time", seconds=seconds)
    if code != 0:
        return Extracted(Outcome.UNREADABLE, detail=f"exit-{code}", seconds=seconds)
    return _answer(answer, seconds)


def _read_answer(child: subprocess.Popen[bytes], deadline: float, max_characters: int) -> tuple[bytes, str]:
    """Read the child's stdout until it closes, the deadline passes, or it grows past its bound."""
    assert child.stdout is not None
    bound = max_characters * 4 + _ANSWER_OVERHEAD
    chunks: list[bytes] = []
    size = 0
    with selectors.DefaultSelector() as selector:
        selector.register(child.stdout, selectors.EVENT_READ)
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return b"", "deadline"
            if not selector.select(remaining):
                continue
            chunk = os.read(child.stdout.fileno(), _READ_CHUNK)
            if not chunk:
                return b"".join(chunks), "closed"
            chunks.append(chunk)
            size += len(chunk)
            if size > bound:
                return b"", "overflow"


def _kill_group(child: subprocess.Popen[bytes]) -> None:
    """Kill the child's process group (the child may not fork, but nothing it left survives)."""
    try:
        os.killpg(child.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _answer(answer: bytes, seconds: float) -> Extracted:
    try:
        reply = json.loads(answer)
        outcome = Outcome(reply["outcome"])
    except (ValueError, KeyError, TypeError):
        return Extracted(Outcome.UNREADABLE, detail="no-answer", seconds=seconds)
    return Extracted(
        outcome,
        text=str(reply.get("text", "")) if outcome is Outcome.OK else "",
        truncated=bool(reply.get("truncated", False)),
        detail=str(reply.get("detail", ""))[:64],
        seconds=seconds,
    )

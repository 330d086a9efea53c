"""Start a limited process, read a bounded answer by a deadline, and kill its process group.

Shared by the extraction child (mailbox.extraction.sandbox) and the OCR process
(mailbox.extraction.tesseract): both get their input from an unnamed temporary file as
stdin, so the parent never blocks writing while the process has not yet read, and both are
killed, with anything they started, when their deadline passes.
"""

from __future__ import annotations

import os
import selectors
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass

from mailbox.extraction import kernel_limits
from mailbox.extraction.outcome import ExtractionLimits

_READ_CHUNK = 65536
# The whole environment of a limited process: nothing of the parent's (database, Redis, key
# ring) is passed.
SAFE_ENV = {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8"}


def limited(argv: list[str], limits: ExtractionLimits) -> list[str]:
    """`argv` (its program an absolute path) run under the limits' memory and CPU time (kernel_limits)."""
    memory, cpu = str(limits.memory_bytes), str(limits.cpu_seconds)
    return [sys.executable, "-I", kernel_limits.__file__, memory, cpu, *argv]


@dataclass(frozen=True)
class Ended:
    """What a process wrote and how it ended: "closed", "deadline" or "overflow", and its exit code."""

    output: bytes
    how: str
    returncode: int


def run_bounded(
    argv: list[str], stdin: bytes, env: dict[str, str], *, deadline: float, max_output: int
) -> Ended:
    """Run argv with stdin in a new session; stop reading at the deadline or past max_output bytes.

    Edge cases: at the deadline the output is dropped; past max_output the first
    max_output bytes are kept; either way the process group is killed and reaped.
    """
    with tempfile.TemporaryFile() as source:
        source.write(stdin)
        source.seek(0)
        process = subprocess.Popen(
            argv,
            stdin=source,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=env,
            start_new_session=True,
            close_fds=True,
        )
        try:
            output, how = _read(process, deadline, max_output)
        finally:
            kill_group(process)
            process.wait()
            assert process.stdout is not None
            process.stdout.close()
    return Ended(output, how, process.returncode)


def _read(process: subprocess.Popen[bytes], deadline: float, max_output: int) -> tuple[bytes, str]:
    assert process.stdout is not None
    chunks: list[bytes] = []
    size = 0
    with selectors.DefaultSelector() as selector:
        selector.register(process.stdout, selectors.EVENT_READ)
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return b"", "deadline"
            if not selector.select(remaining):
                continue
            chunk = os.read(process.stdout.fileno(), _READ_CHUNK)
            if not chunk:
                return b"".join(chunks), "closed"
            chunks.append(chunk)
            size += len(chunk)
            if size > max_output:
                return b"".join(chunks)[:max_output], "overflow"


def kill_group(process: subprocess.Popen[bytes]) -> None:
    """Kill the process group (the process may not fork, but nothing it left survives)."""
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def killed_by_cpu_limit(returncode: int) -> bool:
    """SIGXCPU at RLIMIT_CPU's soft limit, SIGKILL at its hard one (or ours, after the end)."""
    return returncode in (-signal.SIGXCPU, -signal.SIGKILL)

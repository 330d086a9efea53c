"""The child process one extraction runs in: limits first, then the reader, then its answer.

Started by mailbox.extraction.sandbox with the attachment on stdin and no secret in its
environment. It sets its kernel limits before it reads a byte and, once its readers are
loaded, refuses through an audit hook anything a hostile file could use to reach out (why
each limit: docs/decisions/0011-attachment-text-extraction.md).
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

from mailbox.extraction import images
from mailbox.extraction.kernel_limits import limit_self
from mailbox.extraction.kinds import Kind
from mailbox.extraction.outcome import ExtractionLimits
from mailbox.extraction.sink import ExtractionFailure, Sink

_REFUSED_EVENTS = frozenset(
    {
        "subprocess.Popen",
        "os.system",
        "os.exec",
        "os.posix_spawn",
        "os.spawn",
        "os.fork",
        "os.forkpty",
        "pty.spawn",
        "ctypes.dlopen",
        "webbrowser.open",
    }
)
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_TRUNC
# What each kind's reader imports, loaded before the audit hook is armed (an attached message
# may hold any kind, so it loads them all).
_PRELOADS = {
    Kind.PDF: ("pypdfium2", "pypdfium2.raw", *images.PRELOADS),
    Kind.IMAGE: images.PRELOADS,
    Kind.DOCX: ("docx", "docx.table"),
    Kind.XLSX: ("openpyxl", "openpyxl.reader.excel", "openpyxl.worksheet._read_only"),
    Kind.PPTX: ("pptx",),
    Kind.RTF: ("striprtf.striprtf",),
}


def _preload(kind: Kind) -> None:
    import importlib

    names = [name for names in _PRELOADS.values() for name in names] if kind is Kind.MESSAGE else []
    for name in names or _PRELOADS.get(kind, ()):
        importlib.import_module(name)


def _readable_roots() -> tuple[str, ...]:
    roots = {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.path[0]}
    roots.update(path for path in sys.path if path)
    return tuple(os.path.realpath(root) + os.sep for root in roots)


def _arm_audit_hook() -> None:
    """Refuse every socket, new process and ctypes library, and every open for writing or outside
    the interpreter's and MailFathom's directories, for the rest of the process's life.

    The hook sees Python-level actions only: native code (PDFium, libxml2, Pillow's decoders)
    is held by the kernel limits and by reading from memory, never from a path. So OCR, which
    starts a process, runs in the parent's (mailbox.extraction.tesseract); this child only
    decodes the images and returns them as PNG after its JSON line.
    """
    roots = _readable_roots()

    def hook(event: str, args: tuple[Any, ...]) -> None:
        if event.startswith("socket.") or event in _REFUSED_EVENTS:
            raise PermissionError(f"refused in the extraction process: {event}")
        if event == "open":
            path, mode, flags = (tuple(args) + (None, None))[:3]
            if isinstance(path, int):
                return
            writing = (isinstance(mode, str) and any(c in mode for c in "wax+")) or (
                isinstance(flags, int) and flags & _WRITE_FLAGS
            )
            if writing or not os.path.realpath(os.fsdecode(path)).startswith(roots):
                raise PermissionError("refused in the extraction process: open")

    sys.addaudithook(hook)


def _run(kind: Kind, limits: ExtractionLimits, data: bytes, ocr: bool) -> tuple[dict[str, Any], Sink]:
    from mailbox.extraction.readers import READERS

    sink = Sink(limits.max_characters, limits.ocr_pages if ocr else 0, limits.ocr_bytes)
    try:
        READERS[kind](data, limits, sink)
    except ExtractionFailure as failure:
        return {"outcome": failure.outcome, "detail": failure.detail}, sink
    except MemoryError:
        return {"outcome": "too_large", "detail": "memory"}, sink
    except RecursionError:
        return {"outcome": "unreadable", "detail": "nesting"}, sink
    except Exception as error:  # the reader's library failed on this file: its class says how
        return {"outcome": "unreadable", "detail": type(error).__name__[:60]}, sink
    result = {
        "outcome": "ok",
        "text": sink.text(),
        "truncated": sink.truncated,
        "scans": [[scan.offset, len(scan.png), scan.dpi] for scan in sink.scans],
        "skipped_scans": sink.skipped_scans,
    }
    return result, sink


def _write_answer(result: dict[str, Any], sink: Sink | None) -> None:
    """One JSON line, then the PNG bytes of the images for OCR it lists, back to back."""
    out = sys.stdout.buffer
    out.write(json.dumps(result, ensure_ascii=False).encode() + b"\n")
    if sink is not None and result["outcome"] == "ok":
        for scan in sink.scans:
            out.write(scan.png)
    out.flush()


def main() -> None:
    config = json.loads(sys.argv[-1])
    kind = Kind(config["kind"])
    limits = ExtractionLimits(**config["limits"])
    limit_self(limits.memory_bytes, limits.cpu_seconds)
    sink: Sink | None = None
    try:
        _preload(kind)
        import mailbox.extraction.readers  # noqa: F401  # loaded before the hook, like the libraries
    except MemoryError:
        result: dict[str, Any] = {"outcome": "too_large", "detail": "memory-at-start"}
    else:
        _arm_audit_hook()
        data = sys.stdin.buffer.read()
        result, sink = _run(kind, limits, data, bool(config.get("ocr")))
    _write_answer(result, sink)
    os._exit(0)  # no interpreter teardown: nothing is left to clean, and a library's could hang

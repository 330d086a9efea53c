"""Read mail archives message by message: mbox files, Maildirs, message files, and trees of them.

Streaming, so an archive of any size is read in constant memory. Written here rather than
with the standard library's `mailbox` module, which our app of the same name shadows.

A folder that is not itself a Maildir is a tree: every Maildir in it (a folder with cur/ or
new/) and every file beneath it that holds mail is read, in path order, so one call imports
a whole export of many folders. A file is judged by its content, never its name
(mailbox.archive_kinds): an RFC 822 message under any name, an mbox, an Outlook .msg
(converted by mailbox.outlook). Every other file is passed over and counted by its kind in
the ArchiveReport, without its name.
"""

from __future__ import annotations

import os
import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from mailbox.archive_kinds import HIDDEN, UNREADABLE, judge_file
from mailbox.outlook import OutlookError, outlook_to_mime

MAILDIR_FLAGS = {"D": "\\Draft", "F": "\\Flagged", "R": "\\Answered", "S": "\\Seen", "T": "\\Deleted"}
_ESCAPED_FROM = re.compile(rb"^>+From ")
_HEADER_END = re.compile(rb"\r?\n\r?\n")


@dataclass(frozen=True)
class ArchivedMessage:
    raw: bytes
    flags: tuple[str, ...] = ()
    # Bytes of the archive this message accounts for (its file, or its stretch of an mbox
    # with the separator line): the sum over an archive is archive_bytes(), for progress.
    consumed: int = 0


class ArchiveError(Exception):
    """The path is not an archive MailFathom can read; the message says what it expected."""


@dataclass
class ArchiveReport:
    """What reading an archive found: files read by kind, files passed over by kind.

    Kinds are short labels (mailbox.archive_kinds), never a file's name or content.
    """

    read: Counter[str] = field(default_factory=Counter)
    passed_over: Counter[str] = field(default_factory=Counter)


def detect_format(path: Path) -> str:
    """Return "maildir" or "tree" for a folder; for a file, what its content is (judge_file)."""
    if path.is_dir():
        return "maildir" if _is_maildir(path) else "tree"
    if path.is_file():
        return judge_file(path)[1]
    raise ArchiveError("The path is neither a file nor a folder.")


def archive_bytes(path: Path) -> int:
    """Bytes of every message source the archive at `path` holds (what reading consumes)."""
    return sum(_size(source) for source, _ in _sources(path, Counter()))


def read_archive(path: Path, report: ArchiveReport | None = None) -> Iterator[ArchivedMessage]:
    """Yield the archive's messages in path order; count what was read and passed over."""
    report = report if report is not None else ArchiveReport()
    for source, kind in _sources(path, report.passed_over):
        if kind == "mbox":
            report.read[kind] += 1
            yield from read_mbox(source)
            continue
        try:
            raw = source.read_bytes()
        except OSError:
            report.passed_over[UNREADABLE] += 1
            continue
        if kind == "outlook":
            try:
                converted = outlook_to_mime(raw)
            except OutlookError as error:
                report.passed_over[error.kind] += 1
                continue
            report.read[kind] += 1
            yield ArchivedMessage(converted, consumed=len(raw))
            continue
        report.read[kind] += 1
        flags = _maildir_flags(source.name) if kind == "maildir-message" else ()
        yield ArchivedMessage(raw, flags, consumed=len(raw))


def _size(file: Path) -> int:
    try:
        return file.stat().st_size
    except OSError:
        return 0


def _is_maildir(path: Path) -> bool:
    return (path / "cur").is_dir() or (path / "new").is_dir()


def _sources(path: Path, passed_over: Counter[str]) -> Iterator[tuple[Path, str]]:
    """The files the archive at `path` is read from, each with how to read it."""
    kind = detect_format(path)
    if kind == "maildir":
        yield from ((file, "maildir-message") for file in _maildir_files(path))
    elif kind == "tree":
        yield from _tree_sources(path, passed_over)
    else:
        yield from _judged(path, passed_over)


def _judged(file: Path, passed_over: Counter[str]) -> Iterator[tuple[Path, str]]:
    readable, kind = judge_file(file)
    if readable:
        yield file, kind
    else:
        passed_over[kind] += 1


def _tree_sources(root: Path, passed_over: Counter[str]) -> Iterator[tuple[Path, str]]:
    for directory, subdirectories, files in os.walk(root):
        here = Path(directory)
        subdirectories.sort()
        if here != root and _is_maildir(here):
            yield from ((file, "maildir-message") for file in _maildir_files(here))
            # Its cur/, new/ and tmp/ are read (or skipped) as the Maildir; Maildir++
            # subfolders (.Sent) are Maildirs of their own, found as the walk goes on.
            subdirectories[:] = [d for d in subdirectories if d not in ("cur", "new", "tmp")]
            continue
        for name in sorted(files):
            file = here / name
            if not file.is_file():
                # A dangling link, a fifo, a socket: never opened (a fifo would block).
                passed_over[UNREADABLE] += 1
                continue
            if name.startswith("."):
                passed_over[HIDDEN] += 1
                continue
            yield from _judged(file, passed_over)


def _maildir_files(path: Path) -> Iterator[Path]:
    for sub in ("new", "cur"):
        directory = path / sub
        if directory.is_dir():
            for name in sorted(os.listdir(directory)):
                file = directory / name
                if file.is_file() and not name.startswith("."):
                    yield file


def _maildir_flags(name: str) -> tuple[str, ...]:
    if ":2," not in name:
        return ()
    letters = name.rsplit(":2,", 1)[1]
    return tuple(sorted(MAILDIR_FLAGS[letter] for letter in set(letters) if letter in MAILDIR_FLAGS))


def read_mbox(path: Path) -> Iterator[ArchivedMessage]:
    """Split an mbox (mboxo or mboxrd, as Google Takeout writes) into messages.

    A message starts at a "From " line at the start of the file or after a blank line;
    ">From " escapes are undone one level. Status/X-Status "R" marks a message seen.
    """
    lines: list[bytes] = []
    previous_blank = True
    consumed = 0  # bytes of the file read since the last message was yielded
    with open(path, "rb") as handle:
        for line in handle:
            if line.startswith(b"From ") and previous_blank:
                if lines:
                    yield _mbox_message(lines, consumed)
                    consumed = 0
                lines = []
                previous_blank = False
                consumed += len(line)
                continue
            consumed += len(line)
            previous_blank = line in (b"\n", b"\r\n")
            lines.append(line[1:] if _ESCAPED_FROM.match(line) else line)
    if lines:
        yield _mbox_message(lines, consumed)


def _mbox_message(lines: list[bytes], consumed: int) -> ArchivedMessage:
    # The blank line before the next "From " separator belongs to the mbox, not the message.
    if lines and lines[-1] in (b"\n", b"\r\n"):
        lines = lines[:-1]
    raw = b"".join(lines)
    flags: tuple[str, ...] = ()
    header_end = _HEADER_END.search(raw)
    headers = raw[: header_end.start()] if header_end else raw
    for header in headers.splitlines():
        if header.lower().startswith(b"status:") and b"R" in header[7:]:
            flags = ("\\Seen",)
    return ArchivedMessage(raw, flags, consumed=consumed)

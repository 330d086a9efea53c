"""Read mail archives message by message: mbox files, Maildirs, .eml files, and trees of them.

Streaming, so an archive of any size is read in constant memory. Written here rather than
with the standard library's `mailbox` module, which our app of the same name shadows.

A folder that is not itself a Maildir is a tree: every Maildir in it (a folder with cur/ or
new/), every .eml file and every mbox file (a file that begins with "From ") beneath it is
read, in path order, so one call imports a whole export of many folders. Other files
(indexes, .DS_Store, .msf) are passed over.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

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


def detect_format(path: Path) -> str:
    """Return "maildir", "tree", "eml" or "mbox" for `path`."""
    if path.is_dir():
        return "maildir" if _is_maildir(path) else "tree"
    if path.is_file():
        return "eml" if path.suffix.lower() == ".eml" else "mbox"
    raise ArchiveError("The path is neither a file nor a folder.")


def archive_bytes(path: Path) -> int:
    """Bytes of every message source the archive at `path` holds (what reading consumes)."""
    return sum(source.stat().st_size for source, _ in _sources(path))


def read_archive(path: Path) -> Iterator[ArchivedMessage]:
    for source, kind in _sources(path):
        if kind == "maildir-message":
            raw = source.read_bytes()
            yield ArchivedMessage(raw, _maildir_flags(source.name), consumed=len(raw))
        elif kind == "eml":
            raw = source.read_bytes()
            yield ArchivedMessage(raw, consumed=len(raw))
        else:
            yield from read_mbox(source)


def _is_maildir(path: Path) -> bool:
    return (path / "cur").is_dir() or (path / "new").is_dir()


def _sources(path: Path) -> Iterator[tuple[Path, str]]:
    """The files the archive at `path` is read from, each with how to read it."""
    kind = detect_format(path)
    if kind == "maildir":
        yield from ((file, "maildir-message") for file in _maildir_files(path))
    elif kind == "eml":
        yield path, "eml"
    elif kind == "mbox":
        yield path, "mbox"
    else:
        yield from _tree_sources(path)


def _tree_sources(root: Path) -> Iterator[tuple[Path, str]]:
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
            if name.startswith(".") or not file.is_file():
                continue
            if file.suffix.lower() == ".eml":
                yield file, "eml"
            elif _starts_like_mbox(file):
                yield file, "mbox"


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


def _starts_like_mbox(file: Path) -> bool:
    with open(file, "rb") as handle:
        return handle.read(5) == b"From "


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

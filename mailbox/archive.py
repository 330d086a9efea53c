"""Read mail archives message by message: mbox files, Maildirs and folders of .eml files.

Streaming, so an archive of any size is read in constant memory. Written here rather than
with the standard library's `mailbox` module, which our app of the same name shadows.
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


class ArchiveError(Exception):
    """The path is not an archive MailFathom can read; the message says what it expected."""


def detect_format(path: Path) -> str:
    """Return "maildir", "eml-directory", "eml" or "mbox" for `path`."""
    if path.is_dir():
        if (path / "cur").is_dir() or (path / "new").is_dir():
            return "maildir"
        return "eml-directory"
    if path.is_file():
        return "eml" if path.suffix.lower() == ".eml" else "mbox"
    raise ArchiveError("The path is neither a file nor a folder.")


def count_messages(path: Path) -> int | None:
    """Return how many messages the archive holds, when that is cheap to know (not mbox)."""
    kind = detect_format(path)
    if kind == "maildir":
        return sum(1 for _ in _maildir_files(path))
    if kind == "eml-directory":
        return sum(1 for _ in _eml_files(path))
    if kind == "eml":
        return 1
    return None


def read_archive(path: Path) -> Iterator[ArchivedMessage]:
    kind = detect_format(path)
    if kind == "maildir":
        for file in _maildir_files(path):
            yield ArchivedMessage(file.read_bytes(), _maildir_flags(file.name))
    elif kind == "eml-directory":
        for file in _eml_files(path):
            yield ArchivedMessage(file.read_bytes())
    elif kind == "eml":
        yield ArchivedMessage(path.read_bytes())
    else:
        yield from read_mbox(path)


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


def _eml_files(path: Path) -> Iterator[Path]:
    for file in sorted(path.rglob("*")):
        if file.is_file() and file.suffix.lower() == ".eml":
            yield file


def read_mbox(path: Path) -> Iterator[ArchivedMessage]:
    """Split an mbox (mboxo or mboxrd, as Google Takeout writes) into messages.

    A message starts at a "From " line at the start of the file or after a blank line;
    ">From " escapes are undone one level. Status/X-Status "R" marks a message seen.
    """
    lines: list[bytes] = []
    previous_blank = True
    with open(path, "rb") as handle:
        for line in handle:
            if line.startswith(b"From ") and previous_blank:
                if lines:
                    yield _mbox_message(lines)
                lines = []
                previous_blank = False
                continue
            previous_blank = line in (b"\n", b"\r\n")
            lines.append(line[1:] if _ESCAPED_FROM.match(line) else line)
    if lines:
        yield _mbox_message(lines)


def _mbox_message(lines: list[bytes]) -> ArchivedMessage:
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
    return ArchivedMessage(raw, flags)

"""Judge a file of an archive by its first bytes: a message, an mbox, an Outlook .msg, or what.

Only the start of a file is read (PREFIX_BYTES). The kinds of files passed over are short
labels for the import's report; nothing here ever holds a file's name or content beyond the
call.
"""

from __future__ import annotations

import re
from pathlib import Path

from mailbox.outlook import is_outlook_container

PREFIX_BYTES = 64 * 1024

# Kinds read.
MESSAGE_EML = "eml"  # a message file named .eml
MESSAGE_OTHER = "message"  # an RFC 822 message under any other name (.msg, .txt, none)
OUTLOOK = "outlook"
MBOX = "mbox"

# Kinds passed over.
EMPTY = "empty"
UNREADABLE = "unreadable"
HIDDEN = "hidden"
PDF = "PDF"
IMAGE = "image"
ARCHIVE = "compressed archive"
# An OLE file that is not an Outlook message has its kind from mailbox.outlook (OutlookError.kind).
TEXT = "text (not mail)"
BINARY = "binary"

_SIGNATURES = (
    (b"%PDF-", PDF),
    (b"\x89PNG\r\n\x1a\n", IMAGE),
    (b"\xff\xd8\xff", IMAGE),
    (b"GIF87a", IMAGE),
    (b"GIF89a", IMAGE),
    (b"II*\x00", IMAGE),
    (b"MM\x00*", IMAGE),
    (b"PK\x03\x04", ARCHIVE),
    (b"\x1f\x8b", ARCHIVE),
    (b"BZh", ARCHIVE),
    (b"\xfd7zXZ\x00", ARCHIVE),
    (b"7z\xbc\xaf\x27\x1c", ARCHIVE),
    (b"Rar!\x1a\x07", ARCHIVE),
    (b"\x28\xb5\x2f\xfd", ARCHIVE),
)
# A header field: a name of printable ASCII without colon or space, a colon, a value.
_FIELD = re.compile(rb"^[!-9;-~]{1,76}:")
# Fields one of which any real message carries near its top.
_MAIL_FIELDS = frozenset(
    b"from sender to cc date subject message-id received return-path mime-version delivered-to "
    b"x-original-to envelope-to reply-to in-reply-to references dkim-signature".split()
)


def judge_file(file: Path) -> tuple[bool, str]:
    """Return (whether it is read, its kind) for one file, from its first bytes only."""
    try:
        with open(file, "rb") as handle:
            prefix = handle.read(PREFIX_BYTES)
    except OSError:
        return False, UNREADABLE
    return judge_prefix(prefix, named_eml=file.suffix.lower() == ".eml")


def judge_prefix(prefix: bytes, *, named_eml: bool = False) -> tuple[bool, str]:
    """Judge a file from its first bytes; a file named .eml is read unless it is plainly not mail.

    Edge case: a file opening with a "From " line is an mbox unless it is named .eml.
    """
    if not prefix:
        return False, EMPTY
    if is_outlook_container(prefix):
        return True, OUTLOOK
    for signature, kind in _SIGNATURES:
        if prefix.startswith(signature):
            return False, kind
    if named_eml:
        # Its name says it is one message: read whole, as it is (a leading "From " line
        # included), and parsing marks what is wrong with it.
        return True, MESSAGE_EML
    if prefix.startswith(b"From "):
        return True, MBOX
    if looks_like_message(prefix):
        return True, MESSAGE_OTHER
    return False, TEXT if _is_text(prefix) else BINARY


def looks_like_message(prefix: bytes) -> bool:
    """Whether `prefix` opens with an RFC 822 header block naming at least one mail field.

    Every line up to the first blank one (or the end of the prefix) is a field or a
    continuation; the last line may be cut by the prefix.
    """
    lines = prefix.split(b"\n")
    if len(prefix) >= PREFIX_BYTES:
        lines = lines[:-1]  # cut by the prefix
    known = False
    for number, line in enumerate(lines):
        line = line.rstrip(b"\r")
        if not line:
            return known and number > 0
        if line[:1] in (b" ", b"\t"):
            if number == 0:
                return False
            continue
        if not _FIELD.match(line):
            return False
        known = known or line.split(b":", 1)[0].strip().lower() in _MAIL_FIELDS
    return known


def _is_text(prefix: bytes) -> bool:
    if b"\x00" in prefix:
        return False
    try:
        prefix.decode("utf-8")
    except UnicodeDecodeError as error:
        return error.start >= len(prefix) - 4  # only a character cut by the prefix
    return True

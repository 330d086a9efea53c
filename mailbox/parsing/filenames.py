"""Turn an attacker-chosen attachment name into a safe bare display name."""

from __future__ import annotations

import re
import unicodedata

MAX_FILE_NAME_CHARS = 200
_MAX_KEPT_EXTENSION = 16  # characters after the dot; a longer "extension" is just part of the name

# Removed everywhere a name or a header line is shown: control characters (C0, DEL, C1),
# unpaired surrogates, the line and paragraph separators, and the bidi embedding, override
# and isolate controls plus the directional marks, which reorder what a reader sees
# ("invoice\u202efdp.exe" displays as "invoiceexe.pdf").
_UNSAFE = re.compile(
    "[\x00-\x1f\x7f-\x9f\ud800-\udfff\u2028\u2029\u202a-\u202e\u2066-\u2069\u200e\u200f\u061c]"
)
_STRIP = " \t\r\n\f\v.\u00a0\u3000"


def strip_unsafe_characters(text: str) -> str:
    """Remove control, bidi-control, surrogate and line-separator characters from text."""
    return _UNSAFE.sub("", text)


def _truncate_keeping_extension(name: str) -> str:
    """Cut name to MAX_FILE_NAME_CHARS, keeping a short extension when there is one."""
    if len(name) <= MAX_FILE_NAME_CHARS:
        return name
    stem, dot, ext = name.rpartition(".")
    if dot and stem and 0 < len(ext) <= _MAX_KEPT_EXTENSION:
        kept_stem = stem[: MAX_FILE_NAME_CHARS - len(ext) - 1].rstrip(_STRIP)
        if kept_stem:
            return f"{kept_stem}.{ext}"
    return name[:MAX_FILE_NAME_CHARS].rstrip(_STRIP)


def normalize_file_name(name: str | None) -> tuple[str, bool]:
    """Return (bare safe name, whether it differs from the input); never invent a name.

    Edge cases: directories (``/`` and ``\\``) are dropped and only the last segment is kept
    ("dir/" gives ""); "." and ".." give ""; control characters (NUL, CR, LF, C1), bidi
    controls and line separators are removed, not replaced; leading/trailing whitespace
    and dots are stripped (".bashrc" -> "bashrc"); the result is NFC and at most 200
    characters, keeping an extension of up to 16 characters. Windows device names such
    as "CON.txt" are kept: the name is for display only, never a storage path.
    """
    if not name:
        return "", False
    original = name
    cleaned = strip_unsafe_characters(unicodedata.normalize("NFC", name))
    cleaned = cleaned.replace("\\", "/").rsplit("/", 1)[-1]
    # NFC once more: removing characters can bring combining marks next to new bases.
    cleaned = unicodedata.normalize("NFC", cleaned).strip(_STRIP)
    cleaned = _truncate_keeping_extension(cleaned)
    return cleaned, cleaned != original

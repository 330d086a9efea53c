"""The one reading of an identifier a caller hands back: a UUID this system issued, else 51004.

Stricter than uuid.UUID(), which also takes "+", "_", surrounding whitespace and hyphens
anywhere (it hands the digits to int()): 32 hex digits, hyphens only where a UUID has them,
optional braces, at most MAX_ID_LENGTH characters checked before anything is parsed, and
never the all-zero UUID.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable

from mailfathom.core.errors import EMAIL_ID_REFUSED, MailFathomError

MAX_ID_LENGTH = 64
_HEX = frozenset("0123456789abcdefABCDEF")


def uuid_from_text(text: str) -> uuid.UUID | None:
    """Read 32 hex digits, with hyphens only where a UUID has them and optional braces."""
    if text[:1] == "{" and text[-1:] == "}":
        text = text[1:-1]
    if len(text) == 36 and all(text[i] == "-" for i in (8, 13, 18, 23)):
        text = text.replace("-", "")
    if len(text) != 32 or not set(text) <= _HEX:
        return None
    return uuid.UUID(hex=text)


def issued_uuid(
    value: object,
    subject: str,
    *,
    argument: str | None = None,
    read: Callable[[str], uuid.UUID | None] = uuid_from_text,
) -> uuid.UUID:
    """`value` as a UUID, else 51004 with the sentence "<subject> must be a UUID of at most ..."."""
    if isinstance(value, str) and len(value) <= MAX_ID_LENGTH:
        parsed = read(value)
        if parsed is not None and parsed.int != 0:
            return parsed
    raise MailFathomError(
        EMAIL_ID_REFUSED, EMAIL_ID_REFUSED.message(subject=subject, maximum=MAX_ID_LENGTH), argument=argument
    )

"""Rules about caller-written text that every layer applies the same way."""

from __future__ import annotations

# The longest address a filter or request may name: a 64-character local part, "@" and a
# 255-character domain.
MAX_ADDRESS_LENGTH = 320


def is_whole_address(text: str, longest: int = MAX_ADDRESS_LENGTH) -> bool:
    """Whether `text` (already trimmed) reads as one whole email address: something before
    and after its last "@", at most `longest` characters, no space and no control character."""
    local, _, domain = text.rpartition("@")
    return (
        bool(local)
        and bool(domain)
        and len(text) <= longest
        and not has_control_character(text)
        and not any(character.isspace() for character in text)
    )


def has_control_character(text: str) -> bool:
    """Whether `text` holds a C0 control (below 32: tab and newline included), DEL or a C1
    control (128 to 159).

    Names and filter values refuse them: a log or terminal would act on them, and a name
    holding one could be stored but never typed by a caller.
    """
    return any(ord(character) < 32 or 127 <= ord(character) <= 159 for character in text)

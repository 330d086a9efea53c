"""Rules about caller-written text that every layer applies the same way."""

from __future__ import annotations


def has_control_character(text: str) -> bool:
    """Whether `text` holds a C0 control (below 32: tab and newline included), DEL or a C1
    control (128 to 159).

    Names and filter values refuse them: a log or terminal would act on them, and a name
    holding one could be stored but never typed by a caller.
    """
    return any(ord(character) < 32 or 127 <= ord(character) <= 159 for character in text)

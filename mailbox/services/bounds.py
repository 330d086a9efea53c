"""Argument bounds shared by the read use cases: refused, never clamped."""

from __future__ import annotations

from mailfathom.core.errors import FILTER_REFUSED, MailFathomError
from mailfathom.core.text import has_control_character


def bounded_text(value: object, *, maximum: int, argument: str) -> str:
    """`value` if it is text of 1 to `maximum` characters, not blank, with no control
    character; otherwise 51002 naming the argument. Refused, never cut."""
    if (
        not isinstance(value, str)
        or not value.strip()
        or len(value) > maximum
        or has_control_character(value)
    ):
        raise MailFathomError(
            FILTER_REFUSED,
            f"The {argument} argument must be 1 to {maximum} characters, not blank, without "
            "control characters.",
            argument=argument,
        )
    return value


def whole_number(value: object, *, minimum: int, maximum: int, default: int, code: int, argument: str) -> int:
    """Return `value` (or `default` when None) if it is a whole number in range; else refuse."""
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int) or not minimum <= value <= maximum:
        raise MailFathomError(
            code, f"The {argument} argument must be a whole number from {minimum} to {maximum}."
        )
    return value

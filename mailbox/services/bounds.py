"""Argument bounds shared by the read use cases: refused, never clamped."""

from __future__ import annotations

from mailfathom.errors import MailFathomError


def whole_number(value: object, *, minimum: int, maximum: int, default: int, code: int, argument: str) -> int:
    """Return `value` (or `default` when None) if it is a whole number in range; else refuse."""
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int) or not minimum <= value <= maximum:
        raise MailFathomError(
            code, f"The {argument} argument must be a whole number from {minimum} to {maximum}."
        )
    return value

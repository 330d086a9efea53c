"""What an answer says it relies on: the source numbers it cites, checked against the run's own.

The run numbers each email it hands over and the answer cites `[n]`; afterwards only the
answer text is read, and a number counts only if this run showed it (duplicates collapse,
first mention orders). This is the model's claim checked against what it was given, not
proof: mail can carry a bracketed number of its own. But an email the run never handed over
can never be named.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

# One bracket holding one or more whole numbers, separated by commas: [3], [2, 5], [2,5].
# Six digits at most, so a long digit run is no citation rather than a huge integer.
_MARKER = re.compile(r"\[\s*(\d{1,6}(?:\s*,\s*\d{1,6})*)\s*\]")
_SEPARATOR = re.compile(r"\s*,\s*")


@dataclass(frozen=True)
class Reliance:
    """The sources an answer cites by a number it was shown, and how many markers claimed nothing."""

    numbers: tuple[int, ...]  # first-mention order, each once
    email_ids: tuple[str, ...]  # the email each number names, in the same order
    unmatched: int  # cited numbers this run never showed (counted once per distinct number)


def cited_numbers(answer: str) -> list[int]:
    """Every number `answer` cites in brackets, in order of first mention, each once."""
    found: dict[int, None] = {}
    for match in _MARKER.finditer(answer):
        for piece in _SEPARATOR.split(match.group(1)):
            found.setdefault(int(piece), None)
    return list(found)


def relied_on(answer: str, shown: Mapping[str, int]) -> Reliance:
    """The emails `answer` cites by the numbers this run showed (`shown`: email id -> number)."""
    by_number = {number: email_id for email_id, number in shown.items()}
    numbers: list[int] = []
    email_ids: list[str] = []
    unmatched = 0
    for number in cited_numbers(answer):
        email_id = by_number.get(number)
        if email_id is None:
            unmatched += 1
            continue
        numbers.append(number)
        email_ids.append(email_id)
    return Reliance(numbers=tuple(numbers), email_ids=tuple(email_ids), unmatched=unmatched)

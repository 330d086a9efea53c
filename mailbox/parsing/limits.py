"""Bounds applied to every parse, and the per-parse bookkeeping that enforces them."""

from __future__ import annotations

import time
from dataclasses import dataclass


@dataclass(frozen=True)
class ParseLimits:
    """Bound the work one message may cost.

    Every limit is enforced by cutting work short and recording a defect code; a parse
    never raises because a limit was hit.
    """

    max_depth: int = 20
    max_parts: int = 500
    max_headers: int = 2000
    max_seconds: float = 1.0
    max_header_length: int = 16384
    max_addresses: int = 1000
    max_text_chars: int = 2_000_000


class Budget:
    """Track one parse: its deadline and the defect codes recorded so far (ordered, unique)."""

    def __init__(self, limits: ParseLimits) -> None:
        self.limits = limits
        self._deadline = time.monotonic() + max(0.0, limits.max_seconds)
        self._defects: dict[str, None] = {}

    def defect(self, code: str) -> None:
        """Record a defect code once; later repeats are ignored."""
        self._defects.setdefault(code, None)

    def expired(self) -> bool:
        """Return True (and record "time-limit") once the deadline has passed."""
        if time.monotonic() > self._deadline:
            self.defect("time-limit")
            return True
        return False

    @property
    def defects(self) -> tuple[str, ...]:
        """Return the recorded defect codes in first-seen order."""
        return tuple(self._defects)

"""The period ledger: how many questions and tokens this process admits per aggregate period.

A fixed window anchored at the Unix epoch (an hour-long period begins on the hour), so a
refused caller knows when to come back and every restart agrees where a period begins
without storing anything. The allowance is taken at admission, after the capability read
and before the run: a run in flight already occupies its place, so a burst of concurrent
questions cannot all slip in. Tokens are charged as each provider call reports them.

Process-local and not durable, by design (docs/operations/answering.md, The period ledger
is per process): a durable count would add a database write to every provider call. What that
means is written down in docs/operations/answering.md: with W web workers the deployment
admits up to W times the ceiling, and a restart begins the window with nothing spent.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime

from django.conf import settings
from opentelemetry import metrics

from mailfathom.config import MailFathomSettings
from mailfathom.errors import MailFathomError
from mailfathom.resettable import forgotten_when_changed

logger = logging.getLogger(__name__)

SPEND_REFUSED = 57001

_meter = metrics.get_meter("mailfathom.answering")
RUNS = _meter.create_counter(
    "mailfathom.answering.runs", unit="{run}", description="Questions admitted to a run."
)
TOKENS = _meter.create_counter(
    "mailfathom.answering.tokens", unit="{token}", description="Tokens chat calls reported spending."
)
REFUSALS = _meter.create_counter(
    "mailfathom.answering.period_refusals",
    unit="{question}",
    description="Questions refused because the period's allowance was spent.",
)


@dataclass(frozen=True)
class PeriodSpend:
    period_start: float
    runs: int
    tokens: int


class PeriodLedger:
    """Runs and tokens of the current fixed window; thread-safe, one per process."""

    def __init__(
        self,
        *,
        max_runs: int,
        max_tokens: int,
        period_seconds: int,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.max_runs = max_runs
        self.max_tokens = max_tokens
        self.period_seconds = period_seconds
        self._clock = clock
        self._lock = threading.Lock()
        self._start = self._window(clock())
        self._runs = 0
        self._tokens = 0

    def _window(self, now: float) -> float:
        return now - (now % self.period_seconds)

    def _roll(self) -> None:
        start = self._window(self._clock())
        if start != self._start:
            self._start, self._runs, self._tokens = start, 0, 0

    def admit(self) -> None:
        """Take one run's place in this period, or refuse with 57001 saying when it renews."""
        with self._lock:
            self._roll()
            if self._runs >= self.max_runs or self._tokens >= self.max_tokens:
                renews = datetime.fromtimestamp(self._start + self.period_seconds, tz=UTC)
                logger.warning(
                    "answering period allowance spent: runs=%d tokens=%d period_seconds=%d",
                    self._runs,
                    self._tokens,
                    self.period_seconds,
                )
                REFUSALS.add(1)
                raise MailFathomError(
                    SPEND_REFUSED,
                    "This deployment has spent what it may spend on answering questions in the "
                    f"current period; the allowance renews at {renews.isoformat()}.",
                )
            self._runs += 1
        RUNS.add(1)

    def charge(self, tokens: int) -> None:
        """Add what one provider call reported to the current period."""
        if tokens <= 0:
            return
        with self._lock:
            self._roll()
            self._tokens += tokens
        TOKENS.add(tokens)

    def spend(self) -> PeriodSpend:
        with self._lock:
            self._roll()
            return PeriodSpend(self._start, self._runs, self._tokens)


_ledger: PeriodLedger | None = None
_ledger_lock = threading.Lock()


def period_ledger() -> PeriodLedger:
    """This process's ledger, sized by the MAILFATHOM_ANSWERING_* settings when first used."""
    global _ledger
    values: MailFathomSettings = settings.MAILFATHOM
    wanted = (
        values.answering_max_runs_per_period,
        values.answering_max_tokens_per_period,
        values.answering_aggregate_period,
    )
    with _ledger_lock:
        if _ledger is None or (_ledger.max_runs, _ledger.max_tokens, _ledger.period_seconds) != wanted:
            _ledger = PeriodLedger(max_runs=wanted[0], max_tokens=wanted[1], period_seconds=wanted[2])
        return _ledger


@forgotten_when_changed("MAILFATHOM")
def reset_period_ledger() -> None:
    """Forget this process's ledger (a changed configuration starts a new count)."""
    global _ledger
    with _ledger_lock:
        _ledger = None

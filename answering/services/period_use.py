"""How much of the answering period's allowance is used: runs and tokens of the ceilings.

Read by the status page. The counts are the shared ledger's (answering.ledger), so every
web and Celery process's questions are in them.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

from django.conf import settings

from answering.ledger import period_ledger
from mailfathom.errors import MailFathomError


@dataclass(frozen=True)
class PeriodUse:
    period_seconds: int
    period_start: datetime | None  # None when the ledger cannot be read
    renews_at: datetime | None
    runs: int | None
    max_runs: int
    tokens: int | None
    max_tokens: int
    chat_configured: bool

    @property
    def readable(self) -> bool:
        return self.runs is not None


def read_period_use() -> PeriodUse:
    """The current period's runs and tokens against the ceilings; counts None if Redis is down."""
    ledger = period_ledger()
    chat = settings.MAILFATHOM.endpoint("chat").configured
    try:
        spend = ledger.spend()
    except MailFathomError:
        return PeriodUse(
            ledger.period_seconds, None, None, None, ledger.max_runs, None, ledger.max_tokens, chat
        )
    start = datetime.fromtimestamp(spend.period_start, tz=UTC)
    renews = datetime.fromtimestamp(spend.period_start + ledger.period_seconds, tz=UTC)
    return PeriodUse(
        period_seconds=ledger.period_seconds,
        period_start=start,
        renews_at=renews,
        runs=spend.runs,
        max_runs=ledger.max_runs,
        tokens=spend.tokens,
        max_tokens=ledger.max_tokens,
        chat_configured=chat,
    )

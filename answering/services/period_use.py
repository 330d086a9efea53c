"""How much of a period's allowance is used: runs and tokens of the ceilings.

Read by the status page, for ask_mail's questions and for drafting's drafts, each from its
own shared ledger (answering.ledger), so every web and Celery process's runs are in them.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

from django.conf import settings

from answering.ledger import PeriodLedger, drafting_ledger, period_ledger
from mailfathom.core.config import DRAFTING_ROLES
from mailfathom.core.errors import MailFathomError


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
    return _read(period_ledger(), settings.MAILFATHOM.endpoint("chat").configured)


def read_drafting_use() -> PeriodUse:
    """Drafting's period: drafts and tokens against its own ceilings; counts None if Redis is down."""
    values = settings.MAILFATHOM
    return _read(drafting_ledger(), all(values.chat_endpoint(role).configured for role in DRAFTING_ROLES))


def _read(ledger: PeriodLedger, chat: bool) -> PeriodUse:
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

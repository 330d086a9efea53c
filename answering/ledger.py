"""The period ledgers: how many runs and tokens the deployment admits per aggregate period.

ask_mail (`period_ledger()`) and reply drafting (`drafting_ledger()`) count apart, so neither
spends the other's allowance. Periods are fixed windows anchored at the Unix epoch, counted in
Redis for every process and admitted by one Lua script, so a burst cannot slip past the
ceiling; a run's place is taken at admission. Redis unreachable: a new question is refused
with 56001 rather than admitted uncounted (docs/operations/answering.md, The period ledger).
"""

from __future__ import annotations

import logging
import math
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime

import redis
from django.conf import settings
from django.db import connection
from opentelemetry import metrics

from mailfathom.core.config import MailFathomSettings
from mailfathom.core.errors import CAPABILITY_UNAVAILABLE, Code, MailFathomError
from mailfathom.core.redis_store import redis_client
from mailfathom.core.resettable import forgotten_when_changed

logger = logging.getLogger(__name__)

SPEND_REFUSED = Code.SPEND_REFUSED
# A window's hash outlives its window by this much, so a late charge still finds it.
EXPIRY_MARGIN_SECONDS = 60
REDIS_TIMEOUT_SECONDS = 2.0

ANSWERING = "answering"
DRAFTING = "drafting"
# What each allowance admits, for its sentences: "spent what it may spend on ...".
_PURPOSES = {ANSWERING: "answering questions", DRAFTING: "drafting replies"}

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
_drafting_meter = metrics.get_meter("mailfathom.answering.drafting")
_COUNTERS = {
    ANSWERING: (RUNS, TOKENS, REFUSALS),
    DRAFTING: (
        _drafting_meter.create_counter(
            "mailfathom.drafting.runs", unit="{draft}", description="Drafts admitted to the pipeline."
        ),
        _drafting_meter.create_counter(
            "mailfathom.drafting.tokens", unit="{token}", description="Tokens drafting's calls reported."
        ),
        _drafting_meter.create_counter(
            "mailfathom.drafting.period_refusals",
            unit="{draft}",
            description="Drafts refused because drafting's allowance for the period was spent.",
        ),
    ),
}

# Take one run's place unless either ceiling is reached; answer {admitted, runs, tokens}.
_ADMIT = """
local runs = tonumber(redis.call('HGET', KEYS[1], 'runs') or '0')
local tokens = tonumber(redis.call('HGET', KEYS[1], 'tokens') or '0')
if runs >= tonumber(ARGV[1]) or tokens >= tonumber(ARGV[2]) then
  return {0, runs, tokens}
end
redis.call('HINCRBY', KEYS[1], 'runs', 1)
redis.call('EXPIRE', KEYS[1], tonumber(ARGV[3]))
return {1, runs + 1, tokens}
"""


@dataclass(frozen=True)
class PeriodSpend:
    period_start: float
    runs: int
    tokens: int


_clients: dict[tuple[int, str], redis.Redis] = {}
_clients_lock = threading.Lock()


def _redis() -> redis.Redis:
    """One client (and connection pool) per process and Redis URL, with short socket timeouts."""
    key = (os.getpid(), settings.REDIS_URL)
    with _clients_lock:
        client = _clients.get(key)
        if client is None:
            client = _clients[key] = redis_client(timeout=REDIS_TIMEOUT_SECONDS)
        return client


def ledger_namespace() -> str:
    """The namespace every process of this deployment counts in (see the module docstring)."""
    if settings.PROVIDER_HEALTH_NAMESPACE:
        return settings.PROVIDER_HEALTH_NAMESPACE
    with connection.cursor() as cursor:
        cursor.execute("SELECT current_database(), oid FROM pg_database WHERE datname = current_database()")
        name, oid = cursor.fetchone()
    return f"{name}:{oid}"


def _unavailable(error: BaseException, purpose: str = ANSWERING) -> MailFathomError:
    logger.warning("%s period ledger unreachable: error=%s", purpose, type(error).__name__)
    if purpose == DRAFTING:
        sentence = "This deployment drafts replies but cannot count what drafting spends right now"
    else:
        sentence = "This deployment answers questions about mail but cannot right now"
    return MailFathomError(CAPABILITY_UNAVAILABLE, f"{sentence}; try again in a minute.")


class PeriodLedger:
    """Runs and tokens of the current fixed window, counted in Redis for every process.

    `purpose` (ANSWERING or DRAFTING) keeps each allowance's counts under keys of its own.
    """

    def __init__(
        self,
        *,
        max_runs: int,
        max_tokens: int,
        period_seconds: int,
        clock: Callable[[], float] = time.time,
        namespace: str | None = None,
        client: Callable[[], redis.Redis] = _redis,
        purpose: str = ANSWERING,
    ) -> None:
        if purpose not in _PURPOSES:
            raise ValueError(f"purpose must be one of {', '.join(_PURPOSES)}")
        self.purpose = purpose
        self.max_runs = max_runs
        self.max_tokens = max_tokens
        self.period_seconds = period_seconds
        self._clock = clock
        self._namespace = namespace
        self._client = client

    @property
    def namespace(self) -> str:
        # Resolved on first use: it may need the database, which a constructor should not touch.
        if self._namespace is None:
            self._namespace = ledger_namespace()
        return self._namespace

    def _window(self) -> tuple[float, str, int]:
        """(start, Redis key, seconds the key should live) of the window `clock` is in now."""
        now = self._clock()
        start = now - (now % self.period_seconds)
        # ask_mail's keys are what they were before drafting counted apart: an upgrade in
        # the middle of a period keeps its count.
        key = f"mailfathom:{self.purpose}-period:{self.namespace}:{self.period_seconds}:{int(start)}"
        ttl = math.ceil(start + self.period_seconds - now) + EXPIRY_MARGIN_SECONDS
        return start, key, ttl

    def renews_at(self) -> datetime:
        """When the current period ends and its allowance renews (no Redis call)."""
        now = self._clock()
        return datetime.fromtimestamp(now - (now % self.period_seconds) + self.period_seconds, tz=UTC)

    def admit(self) -> None:
        """Take one run's place in this period, or refuse with 57001 saying when it renews.

        56001 when the shared count cannot be reached: no question runs uncounted.
        """
        start, key, ttl = self._window()
        try:
            admitted, runs, tokens = self._client().eval(_ADMIT, 1, key, self.max_runs, self.max_tokens, ttl)
        except (redis.RedisError, OSError) as error:
            raise _unavailable(error, self.purpose) from error
        counted_runs, _, refusals = _COUNTERS[self.purpose]
        if not admitted:
            renews = datetime.fromtimestamp(start + self.period_seconds, tz=UTC)
            logger.warning(
                "%s period allowance spent: runs=%d tokens=%d period_seconds=%d",
                self.purpose,
                runs,
                tokens,
                self.period_seconds,
            )
            refusals.add(1)
            raise MailFathomError(
                SPEND_REFUSED,
                f"This deployment has spent what it may spend on {_PURPOSES[self.purpose]} in the "
                f"current period; the allowance renews at {renews.isoformat()}.",
            )
        counted_runs.add(1)

    def charge(self, tokens: int) -> None:
        """Add what one provider call reported to the current period.

        A charge Redis cannot take is logged, not raised: the call was made and the run
        holds its place; the next admission, finding Redis unreachable, refuses anyway.
        """
        if tokens <= 0:
            return
        _, key, ttl = self._window()
        try:
            pipe = self._client().pipeline(transaction=True)
            pipe.hincrby(key, "tokens", tokens)
            pipe.expire(key, ttl)
            pipe.execute()
        except (redis.RedisError, OSError) as error:
            logger.warning(
                "%s tokens not recorded: tokens=%d error=%s", self.purpose, tokens, type(error).__name__
            )
        _COUNTERS[self.purpose][1].add(tokens)

    def spend(self) -> PeriodSpend:
        """What the current period has admitted and been charged, across every process."""
        start, key, _ = self._window()
        try:
            runs, tokens = self._client().hmget(key, ["runs", "tokens"])
        except (redis.RedisError, OSError) as error:
            raise _unavailable(error, self.purpose) from error
        return PeriodSpend(start, int(runs or 0), int(tokens or 0))


_ledgers: dict[str, PeriodLedger] = {}
_ledger_lock = threading.Lock()


def _sized(purpose: str, wanted: tuple[int, int, int]) -> PeriodLedger:
    with _ledger_lock:
        ledger = _ledgers.get(purpose)
        if ledger is None or (ledger.max_runs, ledger.max_tokens, ledger.period_seconds) != wanted:
            ledger = _ledgers[purpose] = PeriodLedger(
                max_runs=wanted[0], max_tokens=wanted[1], period_seconds=wanted[2], purpose=purpose
            )
        return ledger


def period_ledger() -> PeriodLedger:
    """ask_mail's ledger, sized by the MAILFATHOM_ANSWERING_* settings when first used."""
    values: MailFathomSettings = settings.MAILFATHOM
    return _sized(
        ANSWERING,
        (
            values.answering_max_runs_per_period,
            values.answering_max_tokens_per_period,
            values.answering_aggregate_period,
        ),
    )


def drafting_ledger() -> PeriodLedger:
    """Reply drafting's ledger (one run a draft), sized by MAILFATHOM_DRAFTING_*_PER_PERIOD."""
    values: MailFathomSettings = settings.MAILFATHOM
    return _sized(
        DRAFTING,
        (
            values.drafting_max_runs_per_period,
            values.drafting_max_tokens_per_period,
            values.drafting_aggregate_period,
        ),
    )


@forgotten_when_changed("MAILFATHOM", "PROVIDER_HEALTH_NAMESPACE", "DATABASES", "REDIS_URL")
def reset_period_ledger() -> None:
    """Forget this process's ledger objects (their ceilings or namespace may have changed).

    The counts themselves stay in Redis: a changed configuration does not restart a period.
    """
    with _ledger_lock:
        _ledgers.clear()

"""What reply drafting is doing, per account, for the System status page: counts and times only.

Per account: whether drafting is on, how many emails wait at the gate (the gate's own
conditions, counted), the latest run (what started it and what it did), the refusals of
the last day by outcome, and when the next scheduled run is due. For the deployment: the
drafting allowance's use and the beat schedule's interval. A latest run left unfinished by
a dead worker is marked interrupted here (answering.drafting.runs.mark_interrupted_runs). A
fixed number of queries whatever the number of accounts.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.conf import settings
from django.db.models import Count
from django.utils import timezone

from accounts.models import MailAccount
from answering.drafting.gate import RETRY_AFTER, count_awaiting_a_draft
from answering.drafting.runs import mark_interrupted_runs
from answering.models import DraftAttempt, DraftRun, RunTrigger
from answering.services.period_use import PeriodUse, read_drafting_use

SWEEP_TASK = "answering.draft_enabled_accounts"
# Refusals are counted over the gate's hold on repeating ones: what the last day refused.
REFUSALS_SINCE = RETRY_AFTER


@dataclass(frozen=True)
class AccountDrafting:
    account_pk: int
    account_id: str
    display_name: str
    enabled: bool  # served, with drafting on
    waiting: int  # emails the gate would hand the next run (before its per-run bound)
    last_run: DraftRun | None
    refusals: dict[str, int] = field(default_factory=dict)  # AttemptOutcome value -> count
    next_run_at: datetime | None = None  # None: drafting off, or no scheduled run seen yet

    @property
    def running(self) -> bool:
        run = self.last_run
        return run is not None and run.ended_at is None and run.interrupted_at is None

    @property
    def interrupted(self) -> bool:
        run = self.last_run
        return run is not None and run.ended_at is None and run.interrupted_at is not None

    @property
    def refused_total(self) -> int:
        return sum(self.refusals.values())


@dataclass(frozen=True)
class DraftingStatus:
    accounts: list[AccountDrafting]
    allowance: PeriodUse
    schedule_seconds: float | None  # the beat entry's interval; None if there is none
    last_scheduled_at: datetime | None  # when the latest scheduled run began, any account
    refusals_since: timedelta = REFUSALS_SINCE


def sweep_interval_seconds() -> float | None:
    """The beat schedule's interval for the drafting sweep, in seconds (None if not scheduled)."""
    for entry in getattr(settings, "CELERY_BEAT_SCHEDULE", {}).values():
        if entry.get("task") != SWEEP_TASK:
            continue
        schedule = entry.get("schedule")
        if isinstance(schedule, timedelta):
            return schedule.total_seconds()
        if isinstance(schedule, int | float):
            return float(schedule)
        run_every = getattr(schedule, "run_every", None)  # celery.schedules.schedule
        return run_every.total_seconds() if isinstance(run_every, timedelta) else None
    return None


def drafting_status(
    now: datetime | None = None, account_pks: Collection[int] | None = None
) -> DraftingStatus:
    """Drafting per account (every one, or those of `account_pks`) and the deployment's allowance.

    See the module docstring; the allowance and the schedule are the deployment's whichever
    accounts are shown.
    """
    now = now or timezone.now()
    wanted = None if account_pks is None else list(account_pks)
    chosen = MailAccount.objects.order_by("account_id")
    if wanted is not None:
        chosen = chosen.filter(pk__in=wanted)
    accounts = list(chosen)
    enabled = [account for account in accounts if account.served and account.drafting_enabled]
    waiting = count_awaiting_a_draft(enabled, now=now)
    runs = DraftRun.objects.order_by("account_id", "-started_at", "-pk").distinct("account_id")
    if wanted is not None:
        runs = runs.filter(account_id__in=wanted)
    last_runs = {run.account_id: run for run in runs}
    # A latest run left unfinished by a dead worker would read "running" for ever.
    mark_interrupted_runs(last_runs.values(), now)
    refusals: dict[int, dict[str, int]] = {}
    attempts = DraftAttempt.objects.filter(attempted_at__gte=now - REFUSALS_SINCE)
    if wanted is not None:
        attempts = attempts.filter(account_id__in=wanted)
    rows = attempts.order_by().values("account_id", "outcome").annotate(count=Count("pk"))
    for row in rows:
        refusals.setdefault(row["account_id"], {})[row["outcome"]] = row["count"]
    interval = sweep_interval_seconds()
    scheduled = (
        DraftRun.objects.filter(trigger=RunTrigger.SCHEDULE)
        .order_by("-started_at")
        .values_list("started_at", flat=True)
        .first()
    )
    next_run_at = scheduled + timedelta(seconds=interval) if scheduled and interval else None
    return DraftingStatus(
        accounts=[
            AccountDrafting(
                account_pk=account.pk,
                account_id=account.account_id,
                display_name=account.display_name,
                enabled=account in enabled,
                waiting=waiting.get(account.pk, 0),
                last_run=last_runs.get(account.pk),
                refusals=dict(sorted(refusals.get(account.pk, {}).items())),
                next_run_at=next_run_at if account in enabled else None,
            )
            for account in accounts
        ],
        allowance=read_drafting_use(),
        schedule_seconds=interval,
        last_scheduled_at=scheduled,
    )

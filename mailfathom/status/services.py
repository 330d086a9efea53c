"""The status page's one use case: everything it shows, as plain data, in a bounded number of queries."""

from __future__ import annotations

import logging
import time
from collections.abc import Collection
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import redis
from django.utils import timezone

from accounts.services.sign_in_state import SignIn, sign_in_states
from answering.services.drafting_status import DraftingStatus, drafting_status
from answering.services.period_use import PeriodUse, read_period_use
from mailbox.models import AttachmentOutcome
from mailbox.services import attachment_text, coverage_status, embedding
from mailbox.services.coverage_status import DayCount, EmbeddingProgress
from mailbox.services.embedding import ProfileSwitch
from mailbox.services.sync_status import AccountStatus, account_statuses
from mailfathom.core import heartbeat
from mailfathom.core.capability import CapabilityState
from mailfathom.providers import EMBEDDING_ROLE, get_embedder
from mailfathom.providers.health import failure_advice, read_health

logger = logging.getLogger(__name__)

ROLE_LABELS = {
    heartbeat.worker_role("celery"): "Celery worker (synchronization, embedding)",
    heartbeat.worker_role("push"): "Push worker (IMAP IDLE watchers)",
    heartbeat.BEAT: "Celery beat (schedules)",
}


@dataclass(frozen=True)
class ProcessSeen:
    role: str
    slug: str  # for element ids: worker-celery, worker-push, beat
    label: str
    host: str
    seen_at: datetime | None
    age_seconds: float | None
    alive: bool


@dataclass(frozen=True)
class OutcomeCount:
    outcome: str  # an AttachmentOutcome value: ok, too_large, encrypted, ...
    label: str
    count: int


@dataclass(frozen=True)
class AttachmentTextProgress:
    """The attachment text pass seen from the status page: counts and a rate, never a name."""

    active: bool  # some kind is switched on (MAILFATHOM_ATTACHMENT_TEXT_KINDS)
    pending: int  # emails with attachments waiting for this engine version
    outcomes: tuple[OutcomeCount, ...]  # every outcome, in AttachmentOutcome's order, zeros kept
    done_in_window: int  # emails the pass recorded in the last ATTACHMENT_RATE_WINDOW
    per_minute: float | None  # None while the window's first email is under RATE_MIN_SPAN old
    measured_since: datetime | None
    remaining_seconds: float | None  # None when nothing waits or no progress is measured

    @property
    def attachments(self) -> int:
        return sum(row.count for row in self.outcomes)


ATTACHMENT_RATE_WINDOW = timedelta(hours=1)


def attachment_text_progress(now: datetime | None = None) -> AttachmentTextProgress:
    """The backlog and outcomes /health reports (attachment_text.backlog), and the pass's rate.

    The rate is the emails the pass marked done within the last hour (AttachmentExtraction's
    extracted_at, so a re-extraction under a new engine version counts too) over the minutes
    since the first of them; under coverage_status.RATE_MIN_SPAN it is not measured yet, and
    with none in the hour it is zero. Three queries whatever the number of emails or accounts.
    """
    now = now or timezone.now()
    found = attachment_text.backlog()
    since = now - ATTACHMENT_RATE_WINDOW
    done, first = attachment_text.done_since(since)
    per_minute: float | None
    if not done or first is None:
        per_minute, measured_since = 0.0, since
    elif now - first < coverage_status.RATE_MIN_SPAN:
        per_minute, measured_since = None, None
    else:
        per_minute, measured_since = done / ((now - first).total_seconds() / 60), first
    remaining = found.pending / per_minute * 60 if found.pending and per_minute else None
    return AttachmentTextProgress(
        active=bool(attachment_text.enabled_kinds()),
        pending=found.pending,
        outcomes=tuple(
            OutcomeCount(outcome=value, label=str(label), count=found.outcomes.get(value, 0))
            for value, label in AttachmentOutcome.choices
        ),
        done_in_window=done,
        per_minute=per_minute,
        measured_since=measured_since,
        remaining_seconds=remaining,
    )


@dataclass(frozen=True)
class ProviderFailure:
    """Why a provider role is degraded: its last failure, from the shared health record."""

    kind: str  # a ProviderError kind: timeout, unavailable, credential_refused, ...
    at: datetime | None
    failures: int  # failed calls since the last success, counted by every process
    advice: str  # what the kind usually means and what to do about it

    @property
    def label(self) -> str:
        return self.kind.replace("_", " ")


def embedding_failure(semantic_search: CapabilityState) -> ProviderFailure | None:
    """The last embedding failure while it is what degrades semantic search, else None.

    None while semantic search is not degraded, or is degraded only because the configured
    model is not the active profile's (the page says that on its own line).
    """
    if semantic_search != CapabilityState.DEGRADED:
        return None
    record = read_health(EMBEDDING_ROLE)
    if record.state != CapabilityState.DEGRADED:
        return None
    at = record.last_failure_at
    return ProviderFailure(
        kind=record.last_failure_kind or "unknown",
        at=datetime.fromtimestamp(at, tz=UTC) if at is not None else None,
        failures=record.consecutive_failures,
        advice=failure_advice(EMBEDDING_ROLE, record.last_failure_kind),
    )


@dataclass(frozen=True)
class SystemStatus:
    generated_at: datetime
    accounts: list[AccountStatus]
    processes: list[ProcessSeen] | None  # None when Redis cannot be read
    embedding: EmbeddingProgress
    semantic_search: CapabilityState
    embedder_configured: bool  # False: no provider is set, so nothing will ever be embedded
    embedding_failure: ProviderFailure | None  # why semantic search is degraded, when a failure is why
    embedding_switch: ProfileSwitch | None  # the model changed and reembed has not run
    attachment_text: AttachmentTextProgress
    answering: PeriodUse
    mail_per_day: list[DayCount]  # by each email's own date
    stored_today: int  # emails stored since midnight (UTC), whatever their date
    drafting: DraftingStatus  # its own section: templates/admin/status/drafting.html
    sign_in: dict[int, SignIn]  # by account primary key: how each account authenticates

    @property
    def account_rows(self) -> list[tuple[AccountStatus, SignIn | None]]:
        """Each account's synchronization beside its authentication, in the accounts' order."""
        return [(account, self.sign_in.get(account.account_pk)) for account in self.accounts]

    @property
    def folders(self) -> int:
        return sum(len(account.folders) for account in self.accounts)

    @property
    def watchers_alive(self) -> int:
        return sum(account.watchers_alive for account in self.accounts)

    @property
    def push_folders(self) -> int:
        return sum(1 for a in self.accounts for f in a.folders if f.watcher_alive is not None)


def processes_seen(now: float | None = None) -> list[ProcessSeen] | None:
    """Workers and beat with when each was last seen; None if Redis cannot be read."""
    now = time.time() if now is None else now
    try:
        seen = heartbeat.last_seen()
    except (redis.RedisError, OSError) as error:
        logger.warning("status: heartbeats unreadable: error=%s", type(error).__name__)
        return None
    return [
        ProcessSeen(
            role=role,
            slug=role.replace(":", "-"),
            label=label,
            host=seen[role].host,
            seen_at=datetime.fromtimestamp(at, tz=UTC) if (at := seen[role].at) else None,
            age_seconds=seen[role].age(now),
            alive=seen[role].alive(now),
        )
        for role, label in ROLE_LABELS.items()
    ]


def system_status(account_pks: Collection[int] | None = None) -> SystemStatus:
    """What synchronization, embedding, attachment text, answering, drafting and the workers do now.

    The rows of accounts (synchronization, sign-in, drafting) are those of `account_pks`,
    or every account's for None; the workers, embedding, the ledgers and the charts are
    the deployment's whichever accounts are shown.
    """
    now = timezone.now()
    counts = coverage_status.count_mail(now=now)
    semantic_search = embedding.semantic_state()
    return SystemStatus(
        generated_at=now,
        accounts=account_statuses(account_pks, now=now, stored=counts.per_folder),
        processes=processes_seen(now.timestamp()),
        embedding=coverage_status.embedding_progress(now=now, counts=counts.totals),
        semantic_search=semantic_search,
        embedder_configured=get_embedder() is not None,
        embedding_failure=embedding_failure(semantic_search),
        embedding_switch=embedding.pending_switch(),
        attachment_text=attachment_text_progress(now),
        answering=read_period_use(),
        mail_per_day=counts.per_day,
        stored_today=counts.stored_today,
        drafting=drafting_status(now, account_pks),
        sign_in=sign_in_states(account_pks),
    )

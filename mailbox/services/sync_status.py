"""What synchronization is doing, per account and per mapped folder, read from the database.

Read by the status page, the account pages and /health: counts, times and failure codes
only, never a subject, address or body. A folder's state is derived from its row when read:
synchronizing, interrupted (its lease expired with the run unfinished; recorded when first
seen), stopped (its account waits for a person to sign in or fix its OAuth registration),
backing-off, failing, paused (by the provider's limit or the account's download pace, until
a known time), never or idle. An account takes its folders' most pressing state, "stopped"
while it waits for a person, or "disabled" when it is not served or its synchronization is
off.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum

import redis
from django.conf import settings
from django.db.models import BooleanField, Case, Count, F, Max, Min, Q, Value, When
from django.utils import timezone

from accounts.models import GrantState, MailAccount, SyncMode, awaiting_someone
from mailbox.models import Email, Folder
from mailbox.sync.failures import DOWNLOAD_PACE_SPENT, PROVIDER_LIMIT, describe
from mailbox.sync.folder_state import record_interrupted_runs
from mailbox.sync.idle import WATCHER_KEY
from mailfathom.core.redis_store import redis_client

logger = logging.getLogger(__name__)

# A rate measured over less than this is noise (one batch), so no remaining time is given.
MIN_MEASURED_SECONDS = 5.0


class SyncState(StrEnum):
    IDLE = "idle"
    SYNCHRONIZING = "synchronizing"
    INTERRUPTED = "interrupted"
    STOPPED = "stopped"
    BACKING_OFF = "backing-off"
    FAILING = "failing"
    PAUSED = "paused"
    NEVER = "never"
    DISABLED = "disabled"


@dataclass(frozen=True)
class Backfill:
    """A run's progress towards the server's count, and what it measures of its own speed."""

    stored: int
    server: int
    per_minute: float | None
    remaining_seconds: float | None

    @property
    def fraction(self) -> float:
        return min(1.0, self.stored / self.server) if self.server else 1.0


# A pause is not a failure: the provider or the account's own pace named when it ends, and
# the folder resumes by itself then (docs/operations/mailbox-providers.md).
PAUSES: dict[int, str] = {
    PROVIDER_LIMIT: "paused by the provider's limit",
    DOWNLOAD_PACE_SPENT: "paused at the account's daily download pace",
}
# Why an account waiting for a person is stopped, by its grant's state.
STOPPED_SENTENCES = {
    GrantState.NEEDS_SIGN_IN: "Synchronization is stopped until someone signs in on the account page.",
    GrantState.REGISTRATION_REFUSED: (
        "Synchronization is stopped until someone corrects the OAuth registration."
    ),
}

INTERRUPTED_SENTENCE = "The run stopped without finishing: its worker died or lost the database."


@dataclass(frozen=True)
class Interruption:
    """A run that stopped without finishing: when it was last seen and how far it got."""

    last_seen_at: datetime | None
    stored: int  # what the interrupted run itself had stored
    server: int | None  # the server's count the run was working towards
    sentence: str = INTERRUPTED_SENTENCE


@dataclass(frozen=True)
class FolderStatus:
    folder_pk: int
    account_pk: int
    alias: str
    remote_name: str
    state: SyncState
    stored: int
    server: int | None  # None until a run has opened the folder
    last_committed_at: datetime | None
    run_started_at: datetime | None
    run_stored: int
    failure_code: int | None
    failure_sentence: str
    backoff_until: datetime | None  # while backing off or paused: when the next attempt may start
    backfill: Backfill | None  # only while synchronizing with mail still to fetch
    watcher_alive: bool | None  # None: the account is not in push mode
    interruption: Interruption | None = None  # only while the state is interrupted

    @property
    def pause(self) -> str:
        """While paused, what paused it ("paused by the provider's limit"); else ""."""
        if self.state != SyncState.PAUSED or self.failure_code is None:
            return ""
        return PAUSES.get(self.failure_code, "")


@dataclass(frozen=True)
class AccountStatus:
    account_pk: int
    account_id: str
    display_name: str
    sync_mode: str
    state: SyncState
    mapped_folders: int
    stored: int
    server: int | None  # None until every mapped folder has been opened once
    last_committed_at: datetime | None
    failure_sentence: str  # of the most recent failure among its folders, "" if none
    folders: tuple[FolderStatus, ...]
    stopped_sentence: str = ""  # while it waits for a person: until what synchronization is stopped

    @property
    def watchers_alive(self) -> int:
        return sum(1 for folder in self.folders if folder.watcher_alive)


def folder_state(folder: Folder, now: datetime, *, stopped: bool = False) -> SyncState:
    """The folder's state at `now`; `stopped` when its account waits for a person."""
    if folder.lease_expires_at is not None and folder.lease_expires_at > now:
        return SyncState.SYNCHRONIZING
    if folder.lease_token is not None or folder.interruption_pending:
        return SyncState.INTERRUPTED
    if stopped:
        # No run retries it (MailAccount.objects.synchronized() leaves the account out).
        return SyncState.STOPPED
    if folder.last_failure_code is not None:
        if folder.backoff_until is not None and folder.backoff_until > now:
            if folder.last_failure_code in PAUSES:
                return SyncState.PAUSED
            return SyncState.BACKING_OFF
        return SyncState.FAILING
    if folder.last_committed_at is None:
        return SyncState.NEVER
    return SyncState.IDLE


def _account_state(account: MailAccount, folders: list[FolderStatus], stopped: bool) -> SyncState:
    if not (account.served and account.sync_enabled):
        return SyncState.DISABLED
    if stopped:
        return SyncState.STOPPED
    states = {folder.state for folder in folders}
    for state in (
        SyncState.SYNCHRONIZING,
        SyncState.INTERRUPTED,
        SyncState.BACKING_OFF,
        SyncState.FAILING,
        SyncState.PAUSED,
    ):
        if state in states:
            return state
    if not folders or all(folder.last_committed_at is None for folder in folders):
        return SyncState.NEVER
    return SyncState.IDLE


def _backfill(folder: Folder, stored: int, state: SyncState, now: datetime) -> Backfill | None:
    server = folder.server_message_count
    if state != SyncState.SYNCHRONIZING or server is None or stored >= server:
        return None
    per_minute = remaining = None
    if folder.run_started_at is not None:
        elapsed = (now - folder.run_started_at).total_seconds()
        if elapsed >= MIN_MEASURED_SECONDS and folder.run_stored > 0:
            per_second = folder.run_stored / elapsed
            per_minute = per_second * 60
            remaining = (server - stored) / per_second
    return Backfill(stored=stored, server=server, per_minute=per_minute, remaining_seconds=remaining)


def _interruption(folder: Folder) -> Interruption:
    if folder.lease_token is not None and folder.interrupted_lease == folder.lease_token:
        return Interruption(folder.interrupted_at, folder.interrupted_stored, folder.interrupted_server)
    if folder.lease_token is not None:  # expired after the record above was written
        return Interruption(folder.last_committed_at, folder.run_stored, folder.server_message_count)
    return Interruption(folder.interrupted_at, folder.interrupted_stored, folder.interrupted_server)


def stored_per_folder(folder_pks: Iterable[int] | None = None) -> dict[int, int]:
    """Emails held per folder (every UIDVALIDITY and imported mail included), one grouped scan."""
    rows = Email.objects.order_by()
    if folder_pks is not None:
        rows = rows.filter(folder_id__in=list(folder_pks))
    return dict(rows.values_list("folder_id").annotate(n=Count("id")).values_list("folder_id", "n"))


def _watchers_alive(folder_pks: list[int]) -> dict[int, bool]:
    if not folder_pks:
        return {}
    try:
        client = redis_client(timeout=2.0)
        try:
            values = client.mget([WATCHER_KEY.format(folder_pk=pk) for pk in folder_pks])
        finally:
            client.close()
    except (redis.RedisError, OSError) as error:
        logger.warning("sync status: push watchers unreadable: error=%s", type(error).__name__)
        return {}
    return {pk: value is not None for pk, value in zip(folder_pks, values, strict=True)}


def account_statuses(
    account_pks: Iterable[int] | None = None,
    *,
    now: datetime | None = None,
    stored: dict[int, int] | None = None,
) -> list[AccountStatus]:
    """The synchronization status of every account (or of `account_pks`), ordered by identifier.

    Five queries whatever the number of accounts and folders (recording interrupted runs,
    accounts, mapped folders, the stored counts, and the push watchers in Redis); `stored`
    may pass counts already read.
    """
    now = now or timezone.now()
    record_interrupted_runs(now)
    accounts = MailAccount.objects.annotate(
        mapped=Count("folders"),
        waits=Case(
            When(awaiting_someone(), then=Value(True)), default=Value(False), output_field=BooleanField()
        ),
        grant_state=F("oauth_grant__state"),
    ).order_by("account_id")
    folders = Folder.objects.filter(mapping__isnull=False).select_related("mapping")
    if account_pks is not None:
        wanted = list(account_pks)
        accounts = accounts.filter(pk__in=wanted)
        folders = folders.filter(account_id__in=wanted)
    folder_rows = list(folders.order_by("account_id", "mapping__alias"))
    counts = stored if stored is not None else stored_per_folder([f.pk for f in folder_rows])
    push_accounts = {a.pk for a in accounts if a.sync_mode == SyncMode.PUSH}
    stopped = {a.pk for a in accounts if a.waits}  # type: ignore[attr-defined]  # annotated above
    alive = _watchers_alive([f.pk for f in folder_rows if f.account_id in push_accounts])

    by_account: dict[int, list[FolderStatus]] = {}
    for folder in folder_rows:
        state = folder_state(folder, now, stopped=folder.account_id in stopped)
        held = counts.get(folder.pk, 0)
        code = folder.last_failure_code
        by_account.setdefault(folder.account_id, []).append(
            FolderStatus(
                folder_pk=folder.pk,
                account_pk=folder.account_id,
                alias=folder.mapping.alias if folder.mapping else "",
                remote_name=folder.remote_name,
                state=state,
                stored=held,
                server=folder.server_message_count,
                last_committed_at=folder.last_committed_at,
                run_started_at=folder.run_started_at,
                run_stored=folder.run_stored,
                failure_code=code,
                failure_sentence=describe(code) if code is not None else "",
                backoff_until=(
                    folder.backoff_until if state in {SyncState.BACKING_OFF, SyncState.PAUSED} else None
                ),
                backfill=_backfill(folder, held, state, now),
                watcher_alive=alive.get(folder.pk, False) if folder.account_id in push_accounts else None,
                interruption=_interruption(folder) if state == SyncState.INTERRUPTED else None,
            )
        )

    statuses = []
    for account in accounts:
        own = by_account.get(account.pk, [])
        servers = [f.server for f in own]
        committed = [f.last_committed_at for f in own if f.last_committed_at is not None]
        failed = [f for f in own if f.failure_code is not None]
        statuses.append(
            AccountStatus(
                account_pk=account.pk,
                account_id=account.account_id,
                display_name=account.display_name,
                sync_mode=account.sync_mode,
                state=_account_state(account, own, account.pk in stopped),
                mapped_folders=account.mapped,  # type: ignore[attr-defined]  # annotated above (Count of folders)
                stored=sum(f.stored for f in own),
                server=sum(s for s in servers if s is not None) if own and None not in servers else None,
                last_committed_at=max(committed) if committed else None,
                failure_sentence=failed[0].failure_sentence if failed else "",
                folders=tuple(own),
                stopped_sentence=(
                    STOPPED_SENTENCES.get(account.grant_state, "")  # type: ignore[attr-defined]  # annotated above
                    if account.pk in stopped
                    else ""
                ),
            )
        )
    return statuses


def account_status(account_pk: int, *, now: datetime | None = None) -> AccountStatus | None:
    """One account's status (its change page); None if no such account."""
    found = account_statuses([account_pk], now=now)
    return found[0] if found else None


@dataclass(frozen=True)
class SyncOverview:
    """The deployment's synchronization in a few figures (/health)."""

    last_committed_at: datetime | None
    folders: int
    failing_folders: int  # a folder paused by a limit that names its end is not failing
    synchronizing_folders: int
    enabled: bool
    paused_folders: int = 0


def sync_overview(*, now: datetime | None = None) -> SyncOverview:
    """One aggregate query over the folders of accounts synchronization works on."""
    now = now or timezone.now()
    paused = _paused(now)
    rows = Folder.objects.filter(
        account__in=MailAccount.objects.synchronized(), mapping__isnull=False
    ).aggregate(
        folders=Count("pk"),
        failing=Count("pk", filter=Q(last_failure_code__isnull=False) & ~paused),
        paused=Count("pk", filter=paused),
        synchronizing=Count("pk", filter=Q(lease_expires_at__gt=now)),
        last=Max("last_committed_at"),
    )
    return SyncOverview(
        last_committed_at=rows["last"],
        folders=rows["folders"],
        failing_folders=rows["failing"],
        synchronizing_folders=rows["synchronizing"],
        enabled=settings.MAILFATHOM.sync_enabled,
        paused_folders=rows["paused"],
    )


def _paused(now: datetime) -> Q:
    """Folders paused at `now` by a limit that named its end (the same test as folder_state)."""
    return Q(last_failure_code__in=list(PAUSES), backoff_until__gt=now)


def paused_accounts(*, now: datetime | None = None) -> dict[int, int]:
    """Accounts synchronization works on with a folder paused now, each with the pause's code.

    One query. An account paused both ways reports the provider's limit (61012): the
    provider's word outranks the account's own pace.
    """
    now = now or timezone.now()
    rows = (
        Folder.objects.filter(
            _paused(now), account__in=MailAccount.objects.synchronized(), mapping__isnull=False
        )
        .order_by()
        .values_list("account_id")
        .annotate(code=Min("last_failure_code"))  # 61012 before 61013
    )
    return dict(rows)


@dataclass(frozen=True)
class Failing:
    """An account whose synchronization has been failing: since when, how, on how many folders."""

    account_pk: int
    since: datetime  # the earliest first failure among its failing folders
    codes: tuple[int, ...]  # the failing folders' last codes, each once, ascending
    folders: int


def failing_accounts(failing_for: timedelta, *, now: datetime | None = None) -> dict[int, Failing]:
    """Accounts synchronization works on with a mapped folder failing for at least `failing_for`.

    One query. A folder paused by a limit that names its end is not failing; an account that
    waits for a person to sign in is left out (synchronization is stopped, not failing).
    """
    now = now or timezone.now()
    rows = (
        Folder.objects.filter(
            account__in=MailAccount.objects.synchronized(),
            mapping__isnull=False,
            last_failure_code__isnull=False,
            failing_since__lte=now - failing_for,
        )
        .exclude(_paused(now))
        .order_by("account_id", "failing_since")
        .values_list("account_id", "failing_since", "last_failure_code")
    )
    found: dict[int, Failing] = {}
    for account_pk, since, code in rows:
        assert since is not None and code is not None  # filtered above
        seen = found.get(account_pk)
        if seen is None:
            found[account_pk] = Failing(account_pk, since, (code,), 1)
        else:
            codes = tuple(sorted({*seen.codes, code}))
            found[account_pk] = Failing(account_pk, seen.since, codes, seen.folders + 1)
    return found


def push_mode_accounts() -> int:
    """How many accounts synchronization works on ask for push (IMAP IDLE watchers)."""
    return MailAccount.objects.synchronized().filter(sync_mode=SyncMode.PUSH).count()

"""/health: each part of the deployment with a status, and one overall status.

Required parts (the database, Redis) down: "unavailable" and 503. Any other part not ok
(workers, beat, the last synchronization, the embedding backlog): "degraded" but still 200,
so a load balancer keeps a web process whose worker is late. The push worker counts only
while some account is in push mode. Figures are counts and ages only: nothing names an
account, a folder or a mail, except the mailbox sign-in part's list of accounts, given only
to a staff user who may view mail accounts (`detailed`). Parts and their figures carry Python
names; the view publishes them under their wire names.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import redis
from django.db import DatabaseError, connection

from accounts.services.sign_in_state import SignInState, sign_in_states
from mailbox.services import attachment_text, coverage_status, sync_status
from mailfathom.core import heartbeat
from mailfathom.core.errors import Code
from mailfathom.core.redis_store import redis_client
from mailfathom.core.wire import wire_keys

logger = logging.getLogger(__name__)

OK, DOWN, STALE, NEVER, FAILING, INACTIVE, UNKNOWN, DEGRADED = (
    "ok",
    "down",
    "stale",
    "never-seen",
    "failing",
    "inactive",
    "unknown",
    "degraded",
)
FINE = {OK, INACTIVE}


@dataclass(frozen=True)
class Part:
    status: str
    required: bool = False
    detail: dict[str, object] = field(default_factory=dict)


@dataclass(frozen=True)
class HealthReport:
    parts: dict[str, Part]

    @property
    def status(self) -> str:
        if any(part.required and part.status != OK for part in self.parts.values()):
            return "unavailable"
        if any(part.status not in FINE for part in self.parts.values()):
            return "degraded"
        return "ok"

    @property
    def http_status(self) -> int:
        return 503 if self.status == "unavailable" else 200


def _database() -> Part:
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
            ok = cursor.fetchone() == (1,)
    except Exception as error:
        logger.warning("health: database unreachable: error=%s", type(error).__name__)
        ok = False
    return Part(OK if ok else DOWN, required=True)


def _redis() -> Part:
    try:
        client = redis_client(timeout=2)
        try:
            ok = bool(client.ping())
        finally:
            client.close()
    except (redis.RedisError, OSError) as error:
        logger.warning("health: Redis unreachable: error=%s", type(error).__name__)
        ok = False
    return Part(OK if ok else DOWN, required=True)


def _seen_part(seen: heartbeat.Seen, now: float) -> Part:
    age = seen.age(now)
    status = OK if seen.alive(now) else (NEVER if age is None else STALE)
    return Part(status, detail={"last_seen_seconds_ago": None if age is None else round(age)})


def _processes(redis_part: Part, database_part: Part, now: float) -> dict[str, Part]:
    unknown = {"worker": Part(UNKNOWN), "push_worker": Part(UNKNOWN), "beat": Part(UNKNOWN)}
    if redis_part.status != OK:
        return unknown
    try:
        seen = heartbeat.last_seen()
    except (redis.RedisError, OSError):
        return unknown
    worker = _seen_part(seen[heartbeat.worker_role("celery")], now)
    push = _seen_part(seen[heartbeat.worker_role("push")], now)
    # Kept beside the push_worker part for readers of the earlier shape.
    worker.detail["push_worker_last_seen_seconds_ago"] = push.detail["last_seen_seconds_ago"]
    return {
        "worker": worker,
        "push_worker": _push_worker(push, database_part),
        "beat": _seen_part(seen[heartbeat.BEAT], now),
    }


def _push_worker(seen: Part, database_part: Part) -> Part:
    """The push worker's heartbeat part, "inactive" while no account is in push mode."""
    if database_part.status != OK:
        # Whether push is in use cannot be read; a live worker is still worth saying.
        return seen if seen.status == OK else Part(UNKNOWN, detail=seen.detail)
    in_use = _read_or_unknown(lambda: Part(OK, detail={"push_accounts": sync_status.push_mode_accounts()}))
    if in_use.status == UNKNOWN:
        return seen if seen.status == OK else Part(UNKNOWN, detail=seen.detail)
    detail = {**seen.detail, **in_use.detail}
    if not in_use.detail["push_accounts"]:
        return Part(INACTIVE, detail=detail)
    return Part(seen.status, detail=detail)


def _last_sync(now: float) -> Part:
    overview = sync_status.sync_overview()
    last = overview.last_committed_at
    detail: dict[str, object] = {
        "last_committed_seconds_ago": None if last is None else round(max(0.0, now - last.timestamp())),
        "folders": overview.folders,
        "failing_folders": overview.failing_folders,
        "synchronizing_folders": overview.synchronizing_folders,
        "paused_folders": overview.paused_folders,
    }
    if not overview.enabled or not overview.folders:
        return Part(INACTIVE, detail=detail)
    return Part(FAILING if overview.failing_folders else OK, detail=detail)


# The mailbox sign-in part's counts, one per state, each account under the first that applies.
PAUSED_BY_PROVIDER, PAUSED_AT_PACE = "paused_by_provider", "paused_at_pace"
COUNTED_STATES = (
    SignInState.SIGNED_IN,
    SignInState.NEEDS_SIGN_IN,
    SignInState.REGISTRATION_REFUSED,
    SignInState.NOT_SIGNED_IN,
    PAUSED_BY_PROVIDER,
    PAUSED_AT_PACE,
)


def _mailbox_sign_in(detailed: bool) -> Part:
    """Accounts synchronization is meant to work on, by how they sign in and whether paused.

    "degraded" while an OAuth 2.0 account waits for a person (sign in again, correct the
    registration): nothing retries it until then. A pause ends by itself, so it is counted
    but is fine. Each account counts once: waiting for a person first, then paused (any
    authentication), then its sign-in state; a password account neither waiting nor paused
    is not counted. `detailed` adds the accounts themselves (identifier, authentication,
    state, code).
    """
    paused = sync_status.paused_accounts()
    counts = dict.fromkeys(map(str, COUNTED_STATES), 0)
    listed: list[dict[str, object]] = []
    waiting = 0
    for sign_in in sign_in_states().values():
        if not sign_in.synchronized:
            continue
        state: str
        code: int | None
        if sign_in.waits_for_person:
            state, code = sign_in.state, sign_in.code
            waiting += 1
        elif sign_in.account_pk in paused:
            code = paused[sign_in.account_pk]
            state = PAUSED_BY_PROVIDER if code == Code.PROVIDER_LIMIT else PAUSED_AT_PACE
        elif sign_in.is_oauth:
            state, code = sign_in.state, sign_in.code
        else:
            continue
        counts[state] += 1
        # A row of a list inside the detail: named for the wire here, as the view renames
        # only the detail's own keys.
        listed.append(
            wire_keys(
                {
                    "account_id": sign_in.account_id,
                    "authentication": sign_in.authentication,
                    "state": state,
                    "code": code,
                }
            )
        )
    detail: dict[str, object] = {**counts, "waiting_for_someone": waiting}
    if detailed:
        detail["accounts"] = listed
    return Part(DEGRADED if waiting else OK, detail=detail)


def _embedding_backlog() -> Part:
    """The embedding backlog and the coverage the status page shows (one function computes both).

    sampled_coverage is kept, equal to coverage, for readers of the earlier shape; it once
    held the latest sample's figure, which lagged the page.
    """
    found = coverage_status.backlog()
    return Part(
        OK, detail={"pending": found.pending, "coverage": found.coverage, "sampled_coverage": found.coverage}
    )


def _attachment_text_backlog() -> Part:
    """Mail whose attachments wait for extraction, and what extraction made of the rest (counts)."""
    found = attachment_text.backlog()
    return Part(OK, detail={"pending": found.pending, "outcomes": found.outcomes})


def check_health(detailed: Callable[[], bool] = lambda: False) -> HealthReport:
    """Read every part; `detailed` says whether the caller may see accounts named.

    `detailed` is asked only once the database answers (it may read the session).
    """
    now = time.time()
    database = _database()
    redis_part = _redis()
    parts = {"database": database, "redis": redis_part, **_processes(redis_part, database, now)}
    reads: tuple[tuple[str, Callable[[], Part]], ...] = (
        ("last_sync", lambda: _last_sync(now)),
        ("embedding_backlog", _embedding_backlog),
        ("attachment_text_backlog", _attachment_text_backlog),
        ("mailbox_sign_in", lambda: _mailbox_sign_in(detailed())),
    )
    for name, read in reads:
        parts[name] = _read_or_unknown(read) if database.status == OK else Part(UNKNOWN)
    return HealthReport(parts)


def _read_or_unknown(read: Callable[[], Part]) -> Part:
    # A database that answers SELECT 1 but not these (not migrated yet, a lock timeout)
    # leaves the part unknown; /health itself must still answer.
    try:
        return read()
    except DatabaseError as error:
        logger.warning("health: a part is unreadable: error=%s", type(error).__name__)
        return Part(UNKNOWN)

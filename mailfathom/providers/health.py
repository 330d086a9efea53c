"""The health record of each provider role ("embedding", "chat"), shared by every process.

One Redis hash per role: the last success, the last failure and its kind, the failures since;
never text, so any operator may see it. `read_health` turns it into a CapabilityState
(inactive, degraded after a failure with no success since, else available); the next
successful call from any process recovers it. Keys are namespaced by the database name or
PROVIDER_HEALTH_NAMESPACE. Redis unreachable: recording warns, reading falls back to what
this process recorded.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from dataclasses import dataclass, replace
from typing import cast

import redis
from django.conf import settings

from mailfathom.core.capability import CapabilityState
from mailfathom.core.redis_store import redis_client
from mailfathom.core.resettable import forgotten_when_changed

logger = logging.getLogger("mailfathom.providers")

RECORD_FIELDS = ("last_success_at", "last_failure_at", "last_failure_kind", "consecutive_failures")


@dataclass(frozen=True)
class Health:
    """What is known about one role's provider; times are Unix seconds."""

    role: str
    state: CapabilityState
    last_success_at: float | None = None
    last_failure_at: float | None = None
    last_failure_kind: str | None = None
    consecutive_failures: int = 0


_local: dict[str, Health] = {}
_local_lock = threading.Lock()


@forgotten_when_changed("PROVIDER_HEALTH_NAMESPACE", "DATABASES")
def _forget_local() -> None:
    """The fallback copy belongs to one namespace: a new one starts empty."""
    with _local_lock:
        _local.clear()


_clients: dict[tuple[int, str], redis.Redis] = {}


def _redis() -> redis.Redis:
    """One client (and connection pool) per process and Redis URL, short socket timeouts."""
    key = (os.getpid(), settings.REDIS_URL)
    client = _clients.get(key)
    if client is None:
        client = _clients[key] = redis_client(timeout=2.0)
    return client


def health_key(role: str) -> str:
    namespace = settings.PROVIDER_HEALTH_NAMESPACE or settings.DATABASES["default"].get("NAME", "")
    return f"mailfathom:provider-health:{namespace}:{role}"


def is_configured(role: str) -> bool:
    """Whether a provider is configured for `role` (its provider setting is not "none")."""
    return settings.MAILFATHOM.endpoint(role).configured


def _remember(role: str, **changes: object) -> None:
    with _local_lock:
        current = _local.get(role, Health(role, CapabilityState.AVAILABLE))
        _local[role] = replace(current, **changes)  # type: ignore[arg-type]  # changes holds Health fields by name


def record_success(role: str) -> None:
    """Note a successful call: the role is available again, from every process's view."""
    now = time.time()
    _remember(role, last_success_at=now, consecutive_failures=0)
    try:
        _redis().hset(health_key(role), mapping={"last_success_at": now, "consecutive_failures": 0})
    except (redis.RedisError, OSError) as error:
        logger.warning("provider health not recorded: role=%s error=%s", role, type(error).__name__)


def record_failure(role: str, kind: str) -> None:
    """Note a failed call of `kind` (a ProviderError kind, never a message)."""
    now = time.time()
    with _local_lock:
        previous = _local.get(role, Health(role, CapabilityState.AVAILABLE)).consecutive_failures
    _remember(role, last_failure_at=now, last_failure_kind=kind, consecutive_failures=previous + 1)
    key = health_key(role)
    try:
        pipe = _redis().pipeline(transaction=True)
        pipe.hset(key, mapping={"last_failure_at": now, "last_failure_kind": kind})
        pipe.hincrby(key, "consecutive_failures", 1)
        pipe.execute()
    except (redis.RedisError, OSError) as error:
        logger.warning("provider health not recorded: role=%s error=%s", role, type(error).__name__)


def _state(record: Health, configured: bool) -> CapabilityState:
    if not configured:
        return CapabilityState.INACTIVE
    return CapabilityState.DEGRADED if record.consecutive_failures > 0 else CapabilityState.AVAILABLE


def read_health(role: str, *, configured: bool | None = None) -> Health:
    """Return the shared record of `role` and its state (see the module docstring).

    `configured` defaults to `is_configured(role)`; a role whose configuration is not a
    MAILFATHOM_<ROLE>_PROVIDER choice passes its own answer.
    """
    if configured is None:
        configured = is_configured(role)
    try:
        # redis_client() makes a client that decodes no response: keys and values are bytes.
        raw = cast("dict[bytes, bytes]", _redis().hgetall(health_key(role)))
    except (redis.RedisError, OSError) as error:
        logger.warning("provider health not read: role=%s error=%s", role, type(error).__name__)
        with _local_lock:
            record = _local.get(role, Health(role, CapabilityState.AVAILABLE))
        return replace(record, state=_state(record, configured))
    fields = {key.decode(): value.decode() for key, value in raw.items()}
    record = Health(
        role,
        CapabilityState.AVAILABLE,
        last_success_at=float(fields["last_success_at"]) if "last_success_at" in fields else None,
        last_failure_at=float(fields["last_failure_at"]) if "last_failure_at" in fields else None,
        last_failure_kind=fields.get("last_failure_kind"),
        consecutive_failures=int(fields.get("consecutive_failures", 0)),
    )
    return replace(record, state=_state(record, configured))


def clear_health(role: str) -> None:
    """Forget everything recorded about `role` (tests; an operator starting afresh)."""
    with _local_lock:
        _local.pop(role, None)
    try:
        _redis().delete(health_key(role))
    except (redis.RedisError, OSError) as error:
        logger.warning("provider health not cleared: role=%s error=%s", role, type(error).__name__)

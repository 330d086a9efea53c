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
from mailfathom.providers.errors import (
    BAD_RESPONSE,
    CREDENTIAL_REFUSED,
    MODEL_MISMATCH,
    RATE_LIMITED,
    TIMEOUT,
    UNAVAILABLE,
)

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


# What an operator can do about the last failure of each kind, for the status page. A local
# provider's failures have causes of their own (no network is involved); the kinds it never
# raises (a refused credential, throttling) fall back to the general sentence.
_ADVICE = {
    TIMEOUT: (
        "the provider did not answer within MAILFATHOM_{ROLE}_TIMEOUT_SECONDS: the machine or the "
        "endpoint is busy. Calls resume by themselves once it is not; if this persists, raise "
        "the timeout or give the provider more capacity."
    ),
    CREDENTIAL_REFUSED: "the provider refused the key: check MAILFATHOM_{ROLE}_API_KEY.",
    RATE_LIMITED: (
        "the provider is throttling calls: lower MAILFATHOM_{ROLE}_CONCURRENCY or raise the "
        "provider's rate limit."
    ),
    UNAVAILABLE: (
        "the provider could not be reached or failed: check MAILFATHOM_{ROLE}_BASE_URL and that "
        "the server there is running."
    ),
    BAD_RESPONSE: (
        "the provider's answer could not be used: check that MAILFATHOM_{ROLE}_BASE_URL serves "
        "an OpenAI-compatible API."
    ),
    MODEL_MISMATCH: (
        "the provider does not serve the configured model or its size: check MAILFATHOM_{ROLE}_MODEL "
        "and MAILFATHOM_{ROLE}_DIMENSIONS against what it serves."
    ),
}
_LOCAL_ADVICE = {
    TIMEOUT: (
        "the bundled model did not answer within MAILFATHOM_{ROLE}_TIMEOUT_SECONDS, or took longer "
        "than two minutes to load: the machine is busy. Calls resume by themselves once it is "
        "less busy; if this persists, raise the timeout or run fewer processes beside it."
    ),
    UNAVAILABLE: (
        "the bundled model could not be loaded or run: check that the installed packages are "
        "complete (make install) and the worker's log for the error's type."
    ),
}


def failure_advice(role: str, kind: str | None, provider: str | None = None) -> str:
    """A sentence saying what a failure of `kind` for `role` usually means and what to do.

    `provider` defaults to the role's configured provider ("local", "openai").
    """
    if provider is None:
        provider = settings.MAILFATHOM.endpoint(role).provider
    table = {**_ADVICE, **_LOCAL_ADVICE} if provider == "local" else _ADVICE
    text = table.get(kind or "", "the provider failed: see the worker's and the web server's logs.")
    return text.replace("{ROLE}", role.upper())

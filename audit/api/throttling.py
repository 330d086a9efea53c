"""Per-credential rate limits of the compliance API, counted in Redis for every web worker.

Each view names a scope (read, export, erasure) with a rate from mailfathom/config.py and a
fixed window. The credential is the token's id, or the user's id for a session, so a script
cannot borrow its creator's allowance nor the creator the script's (docs/operations/compliance-api.md,
Rate limits).
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import redis
from django.conf import settings
from rest_framework.request import Request
from rest_framework.throttling import BaseThrottle

from audit.api_tokens import ApiToken
from mailfathom.core import config
from mailfathom.core.config import MailFathomSettings
from mailfathom.core.redis_store import redis_client

logger = logging.getLogger(__name__)

KEY_PREFIX = "mailfathom:api-throttle:"


@dataclass(frozen=True)
class Scope:
    """A kind of route: how its rate is read from the settings, and the window that rate is per."""

    rate: Callable[[MailFathomSettings], int]
    window_seconds: int
    window_name: str

    def limit(self) -> int:
        return int(self.rate(settings.MAILFATHOM))

    def variable(self) -> str:
        """The environment variable holding the rate (MAILFATHOM_...)."""
        return config.setting_read_by(self.rate).name


def _read_rate(values: MailFathomSettings) -> int:
    return values.api_read_requests_per_minute


def _export_rate(values: MailFathomSettings) -> int:
    return values.api_export_requests_per_hour


def _erasure_rate(values: MailFathomSettings) -> int:
    return values.api_erasure_requests_per_hour


SCOPES = {
    "read": Scope(_read_rate, 60, "minute"),
    "export": Scope(_export_rate, 3600, "hour"),
    "erasure": Scope(_erasure_rate, 3600, "hour"),
}


def credential_of(request: Request) -> str:
    """`t<id>` for a token, `u<id>` for a person signed in."""
    if isinstance(request.auth, ApiToken):
        return f"t{request.auth.pk}"
    if request.user is not None and request.user.is_authenticated:
        return f"u{request.user.pk}"
    return "anonymous"  # not reached: permissions refuse the anonymous first


class CredentialThrottle(BaseThrottle):
    """Count the request against its credential in the view's `throttle_scope`."""

    def __init__(self) -> None:
        self._wait: float | None = None

    def allow_request(self, request: Request, view: Any) -> bool:
        scope = SCOPES[view.throttle_scope]
        now = time.time()
        # Fixed windows from the epoch: Retry-After can say exactly when the window turns, at the
        # cost that a burst across a boundary may reach twice the rate.
        window_start = int(now // scope.window_seconds) * scope.window_seconds
        key = f"{KEY_PREFIX}{view.throttle_scope}:{credential_of(request)}:{window_start}"
        try:
            client = redis_client(timeout=2)
            try:
                pipeline = client.pipeline()
                pipeline.incr(key)
                pipeline.expire(key, scope.window_seconds + 5)
                count = int(pipeline.execute()[0])
            finally:
                client.close()
        except redis.RedisError:
            # Let through: the limit protects the database, it is not an access control.
            logger.warning(
                "Compliance API throttle unavailable: Redis did not answer; request not throttled."
            )
            return True
        if count > scope.limit():
            self._wait = window_start + scope.window_seconds - now
            return False
        return True

    def wait(self) -> float | None:
        # Rounded up: a client that waits the whole seconds Retry-After says is admitted.
        return None if self._wait is None else max(1, math.ceil(self._wait))


def refusal_sentence(scope_name: str) -> str:
    scope = SCOPES[scope_name]
    return (
        f"This credential made more than {scope.limit()} {scope_name} requests in one {scope.window_name} "
        f"({scope.variable()}). "
    )


def forget_counts() -> int:
    """Delete every counter (a test, or an operator lifting a limit at once); returns how many."""
    client = redis_client(timeout=2)
    try:
        keys = list(client.scan_iter(match=KEY_PREFIX + "*", count=500))
        return int(client.delete(*keys)) if keys else 0
    finally:
        client.close()

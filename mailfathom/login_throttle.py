"""Login throttling, for admin and the plain login page: failures counted per name and address.

Two counters with a lifetime in Redis, not django-axes (which wraps every authenticate(),
needs middleware and stores names and addresses). Counters are keyed by an HMAC under
SECRET_KEY, so Redis and the log hold no name or address in clear. Once either counter is
locked even the right password is refused until the window passes. Redis unreachable: logins
are not throttled (a warning is logged), so operators can reach admin during an outage.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import math
from dataclasses import dataclass
from typing import Any

import redis
from django.conf import settings
from django.contrib.admin.forms import AdminAuthenticationForm
from django.contrib.auth.forms import AuthenticationForm
from django.core.exceptions import ValidationError

from mailfathom.core.redis_store import redis_client

logger = logging.getLogger(__name__)

KEY_PREFIX = "mailfathom:admin-login:"


@dataclass(frozen=True)
class Counter:
    """One counted subject: a user name or an address, with its own limit."""

    scope: str  # "user" or "address": logged, the subject itself never is
    key: str
    limit: int


def _key(scope: str, subject: str) -> str:
    digest = hmac.new(settings.SECRET_KEY.encode(), f"{scope}\0{subject}".encode(), hashlib.sha256)
    return KEY_PREFIX + scope + ":" + digest.hexdigest()


def counters(username: str, address: str) -> list[Counter]:
    """The counters one attempt touches; user names are compared without regard to case."""
    values = settings.MAILFATHOM
    return [
        Counter("user", _key("user", username.casefold()), values.admin_login_failures_per_user),
        Counter("address", _key("address", address), values.admin_login_failures_per_address),
    ]


def is_locked(username: str, address: str) -> bool:
    """Whether the user name or the address has reached its limit within the window."""
    found = counters(username, address)
    try:
        client = redis_client(timeout=2)
        try:
            counts = client.mget([counter.key for counter in found])
        finally:
            client.close()
    except redis.RedisError:
        logger.warning("Admin login throttle unavailable: Redis did not answer; login not throttled.")
        return False
    return any(int(count or 0) >= counter.limit for count, counter in zip(counts, found, strict=True))


def record_failure(username: str, address: str) -> None:
    """Count one failed login; a counter that reaches its limit is locked for the whole window."""
    window = settings.MAILFATHOM.admin_login_lockout_seconds
    found = counters(username, address)
    try:
        client = redis_client(timeout=2)
        try:
            pipeline = client.pipeline()
            for counter in found:
                pipeline.incr(counter.key)
                # Failures are counted within one window from the latest; a counter left
                # alone for a window starts over.
                pipeline.expire(counter.key, window)
            results = pipeline.execute()
        finally:
            client.close()
    except redis.RedisError:
        logger.warning("Admin login throttle unavailable: Redis did not answer; failure not counted.")
        return
    for counter, count in zip(found, results[::2], strict=True):
        if int(count) == counter.limit:
            logger.warning(
                "Admin login locked for %d seconds after %d failures for one %s.",
                window,
                counter.limit,
                "user name" if counter.scope == "user" else "client address",
            )


def record_success(username: str) -> None:
    """Clear the user name's count (the address's stays: one good account must not reset it)."""
    try:
        client = redis_client(timeout=2)
        try:
            client.delete(_key("user", username.casefold()))
        finally:
            client.close()
    except redis.RedisError:
        logger.warning("Admin login throttle unavailable: Redis did not answer.")


THROTTLED = (
    "Too many failed logins for this user name or from this address. Try again in %(minutes)d minutes."
)


class _Throttled(AuthenticationForm):
    """A login form refusing a locked user name or address before checking the password."""

    def clean(self) -> dict[str, Any]:
        username = self.cleaned_data.get("username") or ""
        address = self.request.META.get("REMOTE_ADDR", "") if self.request is not None else ""
        if username and is_locked(username, address):
            minutes = math.ceil(settings.MAILFATHOM.admin_login_lockout_seconds / 60)
            raise ValidationError(
                self.error_messages["throttled"], code="throttled", params={"minutes": minutes}
            )
        try:
            cleaned = super().clean()
        except ValidationError:
            if username:
                record_failure(username, address)
            raise
        if self.user_cache is not None:
            record_success(username)
        return cleaned


class ThrottledAdminLoginForm(_Throttled, AdminAuthenticationForm):
    """Admin's login form, throttled."""

    error_messages = {**AdminAuthenticationForm.error_messages, "throttled": THROTTLED}


class ThrottledLoginForm(_Throttled):
    """The plain login form (people who are not staff, connecting an assistant), throttled alike."""

    error_messages = {**AuthenticationForm.error_messages, "throttled": THROTTLED}

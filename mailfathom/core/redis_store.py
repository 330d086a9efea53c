"""The Redis client for MailFathom's own keys (Celery keeps its own connections)."""

from __future__ import annotations

import redis
from django.conf import settings


def redis_client(timeout: float = 5.0) -> redis.Redis:
    """Return a client for REDIS_URL; the embedded default's `redis+socket://` URL is accepted."""
    url = settings.REDIS_URL.replace("redis+socket://", "unix://", 1)
    return redis.Redis.from_url(url, socket_timeout=timeout)

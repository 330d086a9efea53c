"""When the Celery workers and beat were last seen, shared through Redis.

Every worker records itself under `worker:<queue>` for each queue it consumes (the
default `celery`, and `push` for the IDLE watchers' worker) every HEARTBEAT_SECONDS, from
its own timer (mailfathom.celery.RecordHeartbeat), so a worker busy with long runs is
still seen. Beat records itself when it starts and whenever it publishes a task
(mailfathom.celery); it publishes at least every minute (the polling schedule). So beat
and the workers are seen separately: a beat that stopped leaves the workers' times moving
and its own still.

The hash is namespaced like provider health (the database's name, or
PROVIDER_HEALTH_NAMESPACE), so deployments and test runs sharing one Redis stay apart.
"""

from __future__ import annotations

import json
import logging
import time
from dataclasses import dataclass

import redis
from django.conf import settings

from mailfathom.core.redis_store import redis_client

logger = logging.getLogger(__name__)

HEARTBEAT_SECONDS = 30
# Beat publishes every 60 s; a worker records every 30 s. Two minutes leaves room for both.
STALE_SECONDS = 120
BEAT = "beat"
QUEUES = ("celery", "push")


def worker_role(queue: str) -> str:
    return f"worker:{queue}"


def _key() -> str:
    namespace = settings.PROVIDER_HEALTH_NAMESPACE or settings.DATABASES["default"].get("NAME", "")
    return f"mailfathom:heartbeat:{namespace}"


@dataclass(frozen=True)
class Seen:
    role: str
    at: float | None  # Unix seconds; None: never seen
    host: str

    def age(self, now: float) -> float | None:
        return None if self.at is None else max(0.0, now - self.at)

    def alive(self, now: float) -> bool:
        age = self.age(now)
        return age is not None and age <= STALE_SECONDS


def record(role: str, host: str = "", *, at: float | None = None) -> None:
    """Note that `role` (a worker of a queue, or beat) is alive now; a Redis failure is logged."""
    value = json.dumps({"at": time.time() if at is None else at, "host": host})
    try:
        client = redis_client(timeout=2.0)
        try:
            client.hset(_key(), role, value)
        finally:
            client.close()
    except (redis.RedisError, OSError) as error:
        logger.warning("heartbeat not recorded: role=%s error=%s", role, type(error).__name__)


def last_seen() -> dict[str, Seen]:
    """Every role's last heartbeat; roles never seen are present with `at` None.

    Raises redis.RedisError when Redis cannot be reached (the caller reports that part).
    """
    client = redis_client(timeout=2.0)
    try:
        stored = client.hgetall(_key())
    finally:
        client.close()
    seen = {role: Seen(role, None, "") for role in (BEAT, *(worker_role(q) for q in QUEUES))}
    for raw_role, raw in stored.items():
        role = raw_role.decode() if isinstance(raw_role, bytes) else str(raw_role)
        try:
            data = json.loads(raw)
            seen[role] = Seen(role, float(data["at"]), str(data.get("host", "")))
        except (ValueError, KeyError, TypeError):
            continue
    return seen

"""One holder at a time for a long mailbox pass (the embedding sweep, the attachment text pass).

The hold is a Redis key with an expiry rather than a database lock, so a worker that dies
mid-pass frees the slot on its own once the key expires.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

from mailfathom.core.redis_store import redis_client


@contextmanager
def exclusive_slot(key: str, seconds: int) -> Iterator[Callable[[], bool] | None]:
    """Hold `key` for `seconds`, or yield None when another holder has it.

    Yields a function that renews the hold; call it at least every `seconds`.
    """
    client = redis_client()
    if not client.set(key, "1", nx=True, ex=seconds):
        yield None
        return
    try:
        yield lambda: bool(client.expire(key, seconds))
    finally:
        client.delete(key)

"""What mailbox's long commands (embed, extract_attachments, reembed) say when their slot is
taken or Redis, which holds it, cannot be reached."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager

import redis
from django.core.management.base import CommandError


def redis_unreachable(error: redis.RedisError) -> CommandError:
    return CommandError(f"Redis cannot be reached ({type(error).__name__}); check REDIS_URL.")


@contextmanager
def held_or_refused(
    slot: AbstractContextManager[Callable[[], bool] | None], busy: str
) -> Iterator[Callable[[], bool]]:
    """Hold `slot` for the command and yield its renewing function; CommandError(busy) when
    another holder has it, and a plain sentence when Redis fails, in the slot or the work."""
    try:
        with slot as renew:
            if renew is None:
                raise CommandError(busy)
            yield renew
    except redis.RedisError as error:
        raise redis_unreachable(error) from None

"""The Redis broker transport and the worker's consumer, made to outlive a broker outage.

kombu's Redis channel rebuilds its pool from the transport's `client`, which Celery detaches
when the broker drops, so closing the channel (or a late acknowledgement) killed the worker
with an AttributeError no caller treats as a connection error. Here a channel keeps what it
was opened with, so both meet the broker itself: a connection error while it is down (the
message stays unacked and is restored), success once it is back. The consumer reconnects on
a short fixed backoff, forever.
"""

from __future__ import annotations

import functools
from types import SimpleNamespace
from typing import Any

import kombu.transport
from celery.worker.consumer import Consumer as CeleryConsumer
from kombu.transport import redis

# Seconds between reconnection attempts: 1, 2, 3, then every RECONNECT_INTERVAL_MAX.
RECONNECT_INTERVAL_START = 1.0
RECONNECT_INTERVAL_STEP = 1.0
RECONNECT_INTERVAL_MAX = 3.0


class _OpenedWith:
    """The channel as `_connparams` reads it, with the transport it was opened on."""

    def __init__(self, channel: Channel) -> None:
        self._channel = channel
        self.connection = SimpleNamespace(
            client=channel.opened_with, default_port=channel.opened_default_port, cycle=None
        )

    def __getattr__(self, name: str) -> Any:
        return getattr(self._channel, name)


class Channel(redis.Channel):
    def __init__(self, connection: Any, *args: Any, **kwargs: Any) -> None:
        # Kept before kombu can let go of them: the kombu Connection (host, port,
        # credentials) and the transport's default port.
        self.opened_with = connection.client
        self.opened_default_port = connection.default_port
        super().__init__(connection, *args, **kwargs)

    def _connparams(self, asynchronous: bool = False) -> dict[str, Any]:
        transport = self.connection
        if transport is not None and transport.client is not None:
            params: dict[str, Any] = super()._connparams(asynchronous=asynchronous)
            return params
        # Detached by a lost connection: only restoring or acknowledging messages builds
        # a pool now, and it should reach the broker (or fail as a connection error).
        detached: dict[str, Any] = redis.Channel._connparams(_OpenedWith(self), asynchronous=asynchronous)  # type: ignore[arg-type]  # _OpenedWith stands in for the Channel whose attributes _connparams reads
        return detached


class Transport(redis.Transport):
    Channel = Channel


def install() -> None:
    """Serve the `redis://`, `rediss://` and `redis+socket://` broker URLs with Transport.

    An alias rather than `broker_transport`: a URL such as `redis+socket://` names its
    transport itself, which kombu prefers to the setting.
    """
    for alias in ("redis", "rediss"):
        kombu.transport.TRANSPORT_ALIASES[alias] = f"{__name__}:Transport"
        kombu.transport._transport_cache.pop(alias, None)


class Consumer(CeleryConsumer):
    """Celery's consumer, reconnecting every few seconds for as long as the broker is away."""

    def ensure_connected(self, conn: Any) -> Any:  # a kombu Connection; Celery declares no types
        conn.ensure_connection = functools.partial(
            conn.ensure_connection,
            interval_start=RECONNECT_INTERVAL_START,
            interval_step=RECONNECT_INTERVAL_STEP,
            interval_max=RECONNECT_INTERVAL_MAX,
        )
        return super().ensure_connected(conn)

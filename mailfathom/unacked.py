"""Tasks a dead worker held, handed out again when a worker starts rather than an hour later.

Tasks are acknowledged late, and kombu restores an unacknowledged one only after the
visibility timeout, kept long so a long backfill or IDLE watch is never run twice. Instead
each worker notes the process holding each task it takes (HOLDERS), and on start and
periodically restores, through kombu's `QoS.restore_by_tag`, every task whose holder is dead
(gone on this host, or unseen for DEAD_AFTER_SECONDS elsewhere). A task run twice costs time,
never data: runs are idempotent in the database.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import time
from pathlib import Path
from typing import Any

import redis
from celery import bootsteps
from celery.signals import task_received
from kombu.exceptions import OperationalError

from mailfathom.core import heartbeat

logger = logging.getLogger(__name__)

HOLDERS = "mailfathom:unacked:holders"  # delivery tag -> {"host", "pid", "started"}
ALIVE = "mailfathom:unacked:alive"  # "host:pid:started" -> when last seen (Unix seconds)
# A worker elsewhere is taken for dead once unseen this long (it notes itself every
# heartbeat.HEARTBEAT_SECONDS); generous, so a Redis blip never makes a live one look dead.
DEAD_AFTER_SECONDS = 10 * 60

_STARTED = time.time()
_BROKER_ERRORS = (redis.RedisError, OSError, OperationalError)


def _incarnation() -> dict[str, Any]:
    return {"host": socket.gethostname(), "pid": os.getpid(), "started": _STARTED}


def _name(holder: dict[str, Any]) -> str:
    return f"{holder.get('host')}:{holder.get('pid')}:{holder.get('started')}"


def _runs_here(pid: int) -> bool:
    """Whether a process `pid` of this host is running (a zombie is not)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    return stat.rpartition(")")[2].split()[:1] != ["Z"]


def holder_is_dead(holder: dict[str, Any], alive: dict[str, float], now: float) -> bool:
    me = _incarnation()
    if holder.get("host") == me["host"]:
        if holder.get("pid") == me["pid"]:
            return bool(holder.get("started") != me["started"])  # an earlier process with our pid
        return not _runs_here(int(holder.get("pid") or 0))
    seen = alive.get(_name(holder))
    return seen is None or now - seen > DEAD_AFTER_SECONDS


@task_received.connect
def note_holder(sender: Any = None, request: Any = None, **kwargs: Any) -> None:
    """Note this process as the holder of a task it has just taken (in the consumer)."""
    message = getattr(request, "message", None)
    tag = getattr(message, "delivery_tag", None)
    client = getattr(getattr(message, "channel", None), "client", None)
    if tag is None or client is None:
        return
    try:
        client.hset(HOLDERS, tag, json.dumps(_incarnation()))
    except _BROKER_ERRORS as error:
        logger.warning("unacked: holder not noted: error=%s", type(error).__name__)


def recover(channel: Any, now: float | None = None) -> int:
    """Restore every unacknowledged task whose holder is dead; forget notes of acknowledged ones.

    Returns how many tasks were handed out again.
    """
    now = time.time() if now is None else now
    client = channel.client
    notes = client.hgetall(HOLDERS)
    if not notes:
        return 0
    alive = {_text(k): float(v) for k, v in client.hgetall(ALIVE).items()}
    tags = list(notes)
    held = client.pipeline()
    for tag in tags:
        held.hexists(channel.unacked_key, tag)
    restored, forgotten = 0, []
    for tag, unacknowledged in zip(tags, held.execute(), strict=True):
        if not unacknowledged:
            forgotten.append(tag)
            continue
        if holder_is_dead(json.loads(notes[tag]), alive, now):
            channel.qos.restore_by_tag(_text(tag), client=client, leftmost=True)
            forgotten.append(tag)
            restored += 1
    if forgotten:
        client.hdel(HOLDERS, *forgotten)
    stale = [name for name, seen in alive.items() if now - seen > 2 * DEAD_AFTER_SECONDS]
    if stale:
        client.hdel(ALIVE, *stale)
    return restored


def _text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value


class RecoverUnacked(bootsteps.StartStopStep):
    """At start and every heartbeat.HEARTBEAT_SECONDS: note this process alive, recover().

    Noting itself alive lets workers elsewhere tell it from a dead one; a tick that cannot
    reach the broker is logged and the next one tries again.
    """

    requires = {"celery.worker.components:Timer"}

    def __init__(self, worker: object, **kwargs: object) -> None:
        super().__init__(worker, **kwargs)
        self.timer_entry = None

    def start(self, worker: Any) -> None:
        self.tick(worker)
        self.timer_entry = worker.timer.call_repeatedly(heartbeat.HEARTBEAT_SECONDS, self.tick, (worker,))

    def stop(self, worker: Any) -> None:
        if self.timer_entry is not None:
            self.timer_entry.cancel()
            self.timer_entry = None

    def tick(self, worker: Any) -> None:
        try:
            with worker.app.connection_for_write() as connection:
                channel = connection.default_channel
                channel.client.hset(ALIVE, _name(_incarnation()), time.time())
                restored = recover(channel)
        except _BROKER_ERRORS as error:
            logger.warning("unacked: recovery not run: error=%s", type(error).__name__)
            return
        if restored:
            logger.info("unacked: %d tasks of dead workers handed out again", restored)

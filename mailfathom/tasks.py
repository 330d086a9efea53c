"""Project-level Celery tasks: the heartbeat the status page and /health read."""

from __future__ import annotations

from celery import shared_task

from mailfathom import heartbeat as heartbeats


@shared_task(name="mailfathom.heartbeat", bind=True, ignore_result=True)
def heartbeat(self, queue: str = "celery") -> str:  # type: ignore[no-untyped-def]
    """Record that a worker consuming `queue` is alive (scheduled by beat on each queue)."""
    heartbeats.record(heartbeats.worker_role(queue), self.request.hostname or "")
    return queue

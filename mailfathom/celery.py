"""The Celery application; tasks live in each app's tasks.py and call one use case."""

import os
import socket
from typing import Any

from celery import Celery, bootsteps
from celery.signals import beat_init, before_task_publish, worker_init

from mailfathom import broker, unacked
from mailfathom.core import heartbeat

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "mailfathom.settings")

broker.install()  # before any connection: the Redis transport that outlives an outage
app = Celery("mailfathom")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()

# Set in the beat process only: what it publishes is how beat is seen (mailfathom.core.heartbeat).
_in_beat = False


class RecordHeartbeat(bootsteps.StartStopStep):
    """Record this worker as alive for each queue it consumes, every HEARTBEAT_SECONDS.

    On the worker's own timer (its main process, not a pool slot), so a worker whose every
    slot is busy with a long run is still seen, and no message waits in a queue that no
    worker consumes (a deployment without a push worker).
    """

    requires = {"celery.worker.components:Timer"}

    def __init__(self, worker: object, **kwargs: object) -> None:
        super().__init__(worker, **kwargs)
        self.timer_entry = None

    def start(self, worker: Any) -> None:  # Celery's WorkController, untyped
        self.record(worker)
        self.timer_entry = worker.timer.call_repeatedly(heartbeat.HEARTBEAT_SECONDS, self.record, (worker,))

    def stop(self, worker: Any) -> None:
        if self.timer_entry is not None:
            self.timer_entry.cancel()
            self.timer_entry = None

    @staticmethod
    def record(worker: Any) -> None:
        for queue in worker.app.amqp.queues.consume_from:
            heartbeat.record(heartbeat.worker_role(queue), worker.hostname or "")


app.steps["worker"].add(RecordHeartbeat)
app.steps["worker"].add(unacked.RecoverUnacked)  # a dead worker's tasks, at start


@worker_init.connect
def refuse_misconfiguration(**kwargs: object) -> None:
    """Run Django's system checks before a worker takes any task."""
    from django.core.management import call_command

    call_command("check")


@worker_init.connect
def warm_embedder(sender: Any = None, **kwargs: object) -> None:
    """Load the embedding model before the worker takes a task (MAILFATHOM_EMBEDDING_WARM_START).

    In the worker's main process, before its pool starts: prefork children are forked with
    the weights already in memory and share their pages. Only a worker that consumes the
    default queue (where the sweep and the answering tasks go) loads it; the push worker,
    which only watches folders, does not.
    """
    from mailfathom.providers import warm_embedder as load

    if sender is not None and app.conf.task_default_queue not in sender.app.amqp.queues.consume_from:
        return
    load(wait=True)


@beat_init.connect
def mark_beat(**kwargs: object) -> None:
    """Beat is seen from its start, not only from its first task up to a minute later, so
    the status of a deployment that just started does not say beat was never seen."""
    global _in_beat
    _in_beat = True
    heartbeat.record(heartbeat.BEAT, socket.gethostname())


@before_task_publish.connect
def beat_seen(**kwargs: object) -> None:
    """Each task beat publishes proves beat alive; other publishers record nothing."""
    if _in_beat:
        heartbeat.record(heartbeat.BEAT, socket.gethostname())

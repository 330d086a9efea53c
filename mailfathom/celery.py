"""The Celery application; tasks live in each app's tasks.py and call one use case."""

import os
import socket

from celery import Celery
from celery.signals import beat_init, before_task_publish, worker_init

from mailfathom import heartbeat

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "mailfathom.settings")

app = Celery("mailfathom")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()

# Set in the beat process only: what it publishes is how beat is seen (mailfathom.heartbeat).
_in_beat = False


@worker_init.connect
def refuse_misconfiguration(**kwargs: object) -> None:
    """Run Django's system checks before a worker takes any task."""
    from django.core.management import call_command

    call_command("check")


@beat_init.connect
def mark_beat(**kwargs: object) -> None:
    global _in_beat
    _in_beat = True


@before_task_publish.connect
def beat_seen(**kwargs: object) -> None:
    """Each task beat publishes proves beat alive; other publishers record nothing."""
    if _in_beat:
        heartbeat.record(heartbeat.BEAT, socket.gethostname())

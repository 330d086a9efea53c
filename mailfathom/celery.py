"""The Celery application; tasks live in each app's tasks.py and call one use case."""

import os

from celery import Celery
from celery.signals import worker_init

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "mailfathom.settings")

app = Celery("mailfathom")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


@worker_init.connect
def refuse_misconfiguration(**kwargs: object) -> None:
    """Run Django's system checks before a worker takes any task."""
    from django.core.management import call_command

    call_command("check")

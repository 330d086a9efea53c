"""Scheduling tasks: which accounts are due, and one IDLE watcher per push-mode folder."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from accounts.models import SyncMode
from mailbox.models import Folder
from mailbox.sync.folder_state import ensure_folders
from mailbox.tasks import WATCHER_KEY, start_push_watchers, sync_due_accounts
from mailfathom.celery import app as celery_app
from mailfathom.core.redis_store import redis_client
from tests.factories import FolderMappingFactory, MailAccountFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def queues():
    """Read what tasks put on the real Redis queues, and leave the queues empty after."""
    client = redis_client()
    for queue in ("celery", "push"):
        client.delete(queue)
    yield client
    for queue in ("celery", "push"):
        client.delete(queue)


def _queued(client, queue: str) -> list[str]:
    import json

    return [json.loads(item)["headers"]["task"] for item in client.lrange(queue, 0, -1)]


def test_due_accounts_are_those_never_synchronized_or_past_their_interval(queues):
    never = MailAccountFactory(poll_interval_seconds=300)
    FolderMappingFactory(account=never)
    recent = MailAccountFactory(poll_interval_seconds=300)
    FolderMappingFactory(account=recent)
    Folder.objects.filter(pk__in=[f.pk for f in ensure_folders(recent)]).update(
        last_committed_at=timezone.now() - timedelta(seconds=60)
    )
    stale = MailAccountFactory(poll_interval_seconds=300)
    FolderMappingFactory(account=stale)
    Folder.objects.filter(pk__in=[f.pk for f in ensure_folders(stale)]).update(
        last_committed_at=timezone.now() - timedelta(seconds=600)
    )
    MailAccountFactory(sync_enabled=False)
    MailAccountFactory(served=False)

    assert sync_due_accounts() == 2
    assert _queued(queues, "celery") == ["mailbox.sync_account", "mailbox.sync_account"]


def test_push_watchers_start_once_per_mapped_folder_of_push_accounts(queues):
    push = MailAccountFactory(sync_mode=SyncMode.PUSH)
    FolderMappingFactory(account=push, alias="inbox")
    FolderMappingFactory(account=push, alias="sent")
    polling = MailAccountFactory(sync_mode=SyncMode.POLLING)
    FolderMappingFactory(account=polling)
    folders = ensure_folders(push) + ensure_folders(polling)
    try:
        assert start_push_watchers() == 2
        assert start_push_watchers() == 0  # already watched
        assert _queued(queues, "push") == ["mailbox.watch_folder"] * 2
    finally:
        for folder in folders:
            queues.delete(WATCHER_KEY.format(folder_pk=folder.pk))
    assert celery_app.conf.task_acks_late

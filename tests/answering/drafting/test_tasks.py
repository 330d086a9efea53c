"""Drafting on Celery: the beat entry, and a run queued after a synchronization stored mail."""

from __future__ import annotations

import base64
import json

import pytest
from django.conf import settings

from answering.tasks import draft_account_task, draft_enabled_accounts
from mailbox.signals import synchronization_finished
from mailbox.sync.engine import synchronize_account
from mailfathom.core.redis_store import redis_client
from tests.factories import MailAccountFactory
from tests.mailbox.imap_support import account_for, add_user

pytestmark = pytest.mark.django_db


@pytest.fixture
def queue():
    """What tasks put on the real Redis queue, emptied before and after."""
    client = redis_client()
    client.delete("celery")
    yield client
    client.delete("celery")


def _queued(client) -> list[tuple[str, list]]:
    """(task name, positional arguments) of each message waiting on the queue."""
    items = [json.loads(item) for item in client.lrange("celery", 0, -1)]
    return [(item["headers"]["task"], json.loads(base64.b64decode(item["body"]))[0]) for item in items]


def test_beat_runs_the_drafting_sweep():
    entries = {entry["task"] for entry in settings.CELERY_BEAT_SCHEDULE.values()}
    assert "answering.draft_enabled_accounts" in entries


def test_the_sweep_queues_a_run_for_each_served_account_with_drafting_on(queue):
    on = MailAccountFactory(drafting_enabled=True)
    MailAccountFactory(drafting_enabled=False)
    MailAccountFactory(drafting_enabled=True, served=False)

    assert draft_enabled_accounts() == 1
    assert _queued(queue) == [("answering.draft_account", [on.pk])]


def test_a_synchronization_that_stored_mail_queues_a_run_for_an_account_with_drafting_on(
    queue, django_capture_on_commit_callbacks
):
    on = MailAccountFactory(drafting_enabled=True)
    off = MailAccountFactory(drafting_enabled=False)

    with django_capture_on_commit_callbacks(execute=True):
        synchronization_finished.send(sender=None, account_pk=on.pk, stored=3)
        synchronization_finished.send(sender=None, account_pk=on.pk, stored=0)
        synchronization_finished.send(sender=None, account_pk=off.pk, stored=3)

    assert _queued(queue) == [("answering.draft_account", [on.pk])]


def test_the_task_skips_an_account_that_vanished():
    assert draft_account_task(987654) == {"skipped": "account no longer exists"}


def test_the_task_reports_a_run_that_had_nothing_to_do():
    account = MailAccountFactory(drafting_enabled=False)

    assert draft_account_task(account.pk)["skipped"] == "drafting is off for this account"


@pytest.mark.django_db(transaction=True)
@pytest.mark.dovecot
def test_a_real_synchronization_run_queues_drafting(dovecot, queue):
    user = add_user(dovecot)
    user.append(
        "INBOX", [b"From: a@example.org\r\nSubject: hello\r\nMessage-ID: <q1@example.org>\r\n\r\nHi\r\n"]
    )
    account = account_for(user, drafting_enabled=True)

    synchronize_account(account.pk)
    synchronize_account(account.pk, force=True)  # nothing new: nothing queued

    assert _queued(queue) == [("answering.draft_account", [account.pk])]

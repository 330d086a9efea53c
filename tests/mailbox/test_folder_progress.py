"""One rule for what committed progress does to a folder's failure record
(Folder.objects.record_progress): storing a batch and finishing a run both clear it."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from mailbox.models import Folder
from mailbox.services.store import IncomingMessage, store_messages
from mailbox.sync.engine import synchronize_account
from mailbox.sync.folder_state import record_failure
from tests.factories import MailAccountFactory
from tests.mailbox.factories import mapped_folder
from tests.mailbox.imap_support import account_for, add_user

MESSAGE = b"From: a@example.org\r\nSubject: progress\r\nMessage-ID: <progress@x>\r\n\r\nbody\r\n"


def _failed_folder() -> Folder:
    folder = mapped_folder(MailAccountFactory(), "inbox")
    record_failure(folder, 62001)
    record_failure(folder, 62001)
    folder.refresh_from_db()
    assert (folder.last_failure_code, folder.consecutive_failures) == (62001, 2)
    assert folder.backoff_until is not None
    return folder


def _failure_record(folder: Folder) -> tuple:
    folder.refresh_from_db()
    return folder.last_failure_code, folder.consecutive_failures, folder.backoff_until


@pytest.mark.django_db
def test_recorded_progress_clears_the_failure_record_and_keeps_when_it_failed():
    folder = _failed_folder()
    failed_at = folder.last_failure_at
    at = timezone.now() + timedelta(seconds=1)

    written = Folder.objects.filter(pk=folder.pk).record_progress(at, highest_uid=7)

    assert written == 1
    assert _failure_record(folder) == (None, 0, None)
    assert (folder.last_committed_at, folder.highest_uid, folder.last_failure_at) == (at, 7, failed_at)


@pytest.mark.django_db
def test_recorded_progress_writes_only_the_folders_selected():
    folder, other = _failed_folder(), _failed_folder()
    assert Folder.objects.filter(pk=folder.pk, lease_token=None).record_progress(timezone.now()) == 1
    assert _failure_record(folder) == (None, 0, None)
    assert _failure_record(other)[:2] == (62001, 2)


@pytest.mark.django_db
def test_a_stored_batch_that_advances_the_folder_clears_its_failure_record():
    folder = _failed_folder()
    message = IncomingMessage(uidvalidity=1, uid=5, size=len(MESSAGE), received_at=None, raw=MESSAGE)

    store_messages(folder, [message], advance_to_uid=5)

    assert _failure_record(folder) == (None, 0, None)
    assert folder.highest_uid == 5 and folder.last_committed_at is not None


@pytest.mark.django_db
def test_a_stored_batch_that_does_not_advance_the_folder_leaves_the_record():
    folder = _failed_folder()
    message = IncomingMessage(uidvalidity=1, uid=5, size=len(MESSAGE), received_at=None, raw=MESSAGE)

    store_messages(folder, [message])

    assert _failure_record(folder)[:2] == (62001, 2)


@pytest.mark.django_db
@pytest.mark.dovecot
def test_a_run_that_completes_after_a_failure_clears_the_failure_record(dovecot):
    user = add_user(dovecot)
    account = account_for(user)
    account.set_credential("wrong")
    account.save()
    assert synchronize_account(account.pk).failure_code == 61002
    assert {_failure_record(folder)[0] for folder in Folder.objects.filter(account=account)} == {61002}

    account.set_credential(user.password)
    account.save()
    run = synchronize_account(account.pk, force=True)  # forced: the folders are backing off

    assert run.failure_code is None
    for folder in Folder.objects.filter(account=account):
        assert _failure_record(folder) == (None, 0, None)
        assert folder.last_committed_at is not None

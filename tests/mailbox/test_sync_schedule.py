"""One rule for which accounts synchronization works on (MailAccount.objects.synchronized)
and one for when an account is due for polling (folder_state.due_accounts): the polling
schedule, the push watchers and every run agree."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from accounts.models import MailAccount
from mailbox.models import Folder
from mailbox.sync.engine import synchronize_account
from mailbox.sync.folder_state import due_accounts, ensure_folders
from tests.factories import FolderMappingFactory, MailAccountFactory

pytestmark = pytest.mark.django_db

INTERVAL = 300


NOW = timezone.now()


def _account(*, committed_seconds_ago: list[float | None], **fields) -> MailAccount:
    """An account with one mapped folder per entry, each committed that long before NOW (None: never)."""
    account = MailAccountFactory(poll_interval_seconds=INTERVAL, **fields)
    for ago in committed_seconds_ago:
        mapping = FolderMappingFactory(account=account)
        [folder] = [folder for folder in ensure_folders(account) if folder.mapping_id == mapping.pk]
        if ago is not None:
            Folder.objects.filter(pk=folder.pk).update(last_committed_at=NOW - timedelta(seconds=ago))
    return account


def test_synchronization_works_on_served_accounts_with_synchronization_enabled():
    working = MailAccountFactory()
    MailAccountFactory(served=False)
    MailAccountFactory(sync_enabled=False)
    MailAccountFactory(served=False, sync_enabled=False)
    assert list(MailAccount.objects.synchronized()) == [working]


def test_an_account_with_no_committed_folder_is_due():
    never = _account(committed_seconds_ago=[None])
    no_folder = _account(committed_seconds_ago=[])
    assert set(due_accounts(NOW)) == {never, no_folder}


def test_an_account_is_due_once_its_interval_has_passed_since_its_least_recent_commit():
    recent = _account(committed_seconds_ago=[60])
    stale = _account(committed_seconds_ago=[600])
    one_stale_folder = _account(committed_seconds_ago=[60, 600])
    assert set(due_accounts(NOW)) == {stale, one_stale_folder}
    assert recent not in due_accounts(NOW + timedelta(seconds=INTERVAL - 61))
    assert recent in due_accounts(NOW + timedelta(seconds=INTERVAL - 60))  # exactly the interval


def test_a_folder_never_committed_beside_a_recent_one_does_not_make_the_account_due():
    # The least recent *commit* is what counts: a new folder waits for the account's interval.
    _account(committed_seconds_ago=[60, None])
    assert due_accounts(NOW) == []


def test_an_unserved_or_disabled_account_is_never_due():
    _account(committed_seconds_ago=[None], served=False)
    _account(committed_seconds_ago=[600], sync_enabled=False)
    assert due_accounts(NOW) == []


@pytest.mark.parametrize("fields", [{"served": False}, {"sync_enabled": False}])
def test_a_run_on_an_account_synchronization_does_not_work_on_is_skipped_before_any_session(fields):
    account = _account(committed_seconds_ago=[None], **fields)

    def no_session(account):
        raise AssertionError("a skipped run must not open an IMAP session")

    run = synchronize_account(account.pk, client_factory=no_session, force=True)
    assert run.skipped == "synchronization is disabled for this account"


def test_a_run_on_an_account_synchronization_works_on_goes_on_to_its_folders():
    account = _account(committed_seconds_ago=[])
    run = synchronize_account(account.pk, client_factory=lambda account: None)
    assert run.skipped == "no folder is due"  # past the account check: it has no folder

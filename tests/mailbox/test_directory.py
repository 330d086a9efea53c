"""list_accounts: served accounts in order, the folders tools may read, and no connection detail."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from accounts.models import FolderRole, SyncMode
from mailbox.services.directory import list_accounts
from tests.configure import configure
from tests.factories import FolderMappingFactory, MailAccountFactory
from tests.mailbox.factories import EmailFactory, mapped_folder

pytestmark = pytest.mark.django_db

COMMITTED = datetime(2024, 5, 6, 7, 8, 9, tzinfo=UTC)


@pytest.fixture
def billing():
    account = MailAccountFactory(
        account_id="billing",
        display_name="Shared Billing",
        imap_host="imap.hidden-mailhost.example",
        imap_port=10993,
        username="billing-login@corp.example",
        sync_mode=SyncMode.PUSH,
    )
    account.set_credential("correct horse battery staple")
    account.save()
    mapped_folder(account, "inbox", FolderRole.INBOX, last_committed_at=COMMITTED)
    mapped_folder(account, "spam", FolderRole.JUNK)
    mapped_folder(account, "hr-private", visible_to_tools=False, last_committed_at=COMMITTED)
    FolderMappingFactory(account=account, alias="later")  # mapped, synchronization never reached it
    return account


@pytest.fixture
def archive_account():
    return MailAccountFactory(account_id="archive", display_name="Old Archive", sync_enabled=False)


def _accounts():
    return list_accounts().wire()["accounts"]


def test_accounts_are_ordered_by_identifier_not_display_name(billing, archive_account):
    MailAccountFactory(account_id="zeta", display_name="AAA first by name")
    assert [a["accountId"] for a in _accounts()] == ["archive", "billing", "zeta"]


def test_account_entry_carries_names_mode_and_readable_folders(billing):
    (entry,) = _accounts()
    assert entry == {
        "accountId": "billing",
        "displayName": "Shared Billing",
        "synchronizationMode": "push",
        "synchronizationEnabled": True,
        "folders": [
            {
                "alias": "inbox",
                "role": "inbox",
                "lastCommittedAt": "2024-05-06T07:08:09Z",
                "wasSynchronized": True,
            },
            {"alias": "later", "role": None, "lastCommittedAt": None, "wasSynchronized": False},
            {"alias": "spam", "role": "junk", "lastCommittedAt": None, "wasSynchronized": False},
        ],
    }


def test_folder_hidden_from_tools_is_absent(billing):
    assert "hr-private" not in json.dumps(list_accounts().wire())


def test_junk_folder_is_listed(billing):
    (entry,) = _accounts()
    assert {"alias": "spam", "role": "junk", "lastCommittedAt": None, "wasSynchronized": False} in entry[
        "folders"
    ]


def test_account_mapping_no_folder_lists_an_empty_folders_list(archive_account):
    (entry,) = _accounts()
    assert entry["folders"] == []


def test_account_whose_only_folder_is_hidden_lists_no_folder(archive_account):
    mapped_folder(archive_account, "vault", visible_to_tools=False)
    assert _accounts()[0]["folders"] == []


def test_unserved_account_is_absent_though_its_rows_remain(billing, archive_account):
    billing.served = False
    billing.save()
    EmailFactory(folder=billing.folders.get(alias="inbox").sync_state)
    assert [a["accountId"] for a in _accounts()] == ["archive"]
    text = json.dumps(list_accounts().wire())
    assert "billing" not in text
    assert "Shared Billing" not in text


def test_polling_mode_travels_as_polling(archive_account):
    assert _accounts()[0]["synchronizationMode"] == "polling"


def test_synchronization_enabled_needs_the_account_and_the_deployment(billing, archive_account, settings):
    by_id = {a["accountId"]: a for a in _accounts()}
    assert by_id["billing"]["synchronizationEnabled"] is True
    assert by_id["archive"]["synchronizationEnabled"] is False
    assert list_accounts().synchronization_enabled is True

    configure(settings, sync_enabled=False)
    directory = list_accounts().wire()
    assert [a["synchronizationEnabled"] for a in directory["accounts"]] == [False, False]
    assert directory["synchronizationEnabled"] is False


def test_nothing_about_reaching_the_mail_server_is_published(billing):
    text = json.dumps(list_accounts().wire())
    for value in ("imap.hidden-mailhost.example", "10993", "billing-login", "corp.example", "correct horse"):
        assert value not in text
    assert billing.credential_encrypted not in text
    for name in ("host", "port", "user", "security", "credential", "secret", "password", "tls"):
        assert name not in text.lower()


def test_no_served_account_lists_nothing():
    assert list_accounts().wire()["accounts"] == []


def test_directory_uses_a_fixed_number_of_queries(billing, django_assert_max_num_queries):
    for _ in range(5):
        account = MailAccountFactory()
        for alias in ("inbox", "sent", "archive"):
            mapped_folder(account, alias, last_committed_at=COMMITTED)
    with django_assert_max_num_queries(4):
        assert len(list_accounts().accounts) == 6

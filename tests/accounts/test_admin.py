"""The operator's console: create an account with folder mappings; the credential stays hidden."""

from __future__ import annotations

import pytest
from django.db import connection
from django.urls import reverse

from accounts.models import MailAccount
from tests.factories import MailAccountFactory

pytestmark = pytest.mark.django_db

SECRET = "pa55-word-never-shown"


def _account_form(**overrides):
    data = {
        "account_id": "billing",
        "display_name": "Shared Billing",
        "served": "on",
        "imap_host": "imap.example.org",
        "imap_port": "993",
        "security": "tls",
        "username": "billing@example.org",
        "credential": SECRET,
        "sync_enabled": "on",
        "sync_mode": "polling",
        "poll_interval_seconds": "300",
        "max_message_bytes": str(50 * 1024 * 1024),
        "storage_ceiling_bytes": str(20 * 1024**3),
        "answering_audit_retention_days": "30",
        "folders-TOTAL_FORMS": "2",
        "folders-INITIAL_FORMS": "0",
        "folders-MIN_NUM_FORMS": "0",
        "folders-MAX_NUM_FORMS": "1000",
        "folders-0-alias": "Inbox",
        "folders-0-remote_name": "INBOX",
        "folders-0-role": "inbox",
        "folders-0-visible_to_tools": "on",
        "folders-1-alias": "sent",
        "folders-1-remote_name": "Sent Messages",
        "folders-1-role": "sent",
        "folders-1-visible_to_tools": "on",
    }
    data.update(overrides)
    return data


def test_operator_creates_account_with_two_folder_mappings(admin_client):
    response = admin_client.post(reverse("admin:accounts_mailaccount_add"), _account_form())
    assert response.status_code == 302, response.content.decode()[:2000]
    account = MailAccount.objects.get(account_id="billing")
    assert sorted(account.folders.values_list("alias", "role")) == [("inbox", "inbox"), ("sent", "sent")]
    with connection.cursor() as cursor:
        cursor.execute("SELECT credential_encrypted FROM accounts_mailaccount WHERE id = %s", [account.pk])
        (stored,) = cursor.fetchone()
    assert SECRET not in stored
    assert account.get_credential() == SECRET


def test_change_page_never_shows_the_credential(admin_client):
    admin_client.post(reverse("admin:accounts_mailaccount_add"), _account_form())
    account = MailAccount.objects.get(account_id="billing")
    page = admin_client.get(reverse("admin:accounts_mailaccount_change", args=[account.pk])).content.decode()
    assert SECRET not in page
    assert account.credential_encrypted not in page
    assert "stored (encrypted)" in page


def test_blank_credential_on_change_keeps_the_stored_one(admin_client):
    admin_client.post(reverse("admin:accounts_mailaccount_add"), _account_form())
    account = MailAccount.objects.get(account_id="billing")
    form = _account_form(credential="", **{"folders-TOTAL_FORMS": "0"})
    form.pop("account_id")
    response = admin_client.post(reverse("admin:accounts_mailaccount_change", args=[account.pk]), form)
    assert response.status_code == 302
    account.refresh_from_db()
    assert account.get_credential() == SECRET


def test_new_account_without_credential_is_refused(admin_client):
    response = admin_client.post(reverse("admin:accounts_mailaccount_add"), _account_form(credential=""))
    assert response.status_code == 200
    assert not MailAccount.objects.exists()


def test_two_folders_with_one_role_are_refused(admin_client):
    form = _account_form(**{"folders-1-role": "inbox"})
    response = admin_client.post(reverse("admin:accounts_mailaccount_add"), form)
    assert response.status_code == 200
    assert not MailAccount.objects.exists()


def test_identifier_is_read_only_on_the_change_page(admin_client):
    account = MailAccountFactory(account_id="fixed")
    account.set_credential("x")
    account.save()
    form = _account_form(account_id="renamed", credential="", **{"folders-TOTAL_FORMS": "0"})
    response = admin_client.post(reverse("admin:accounts_mailaccount_change", args=[account.pk]), form)
    assert response.status_code == 302
    assert MailAccount.objects.get(pk=account.pk).account_id == "fixed"


def test_admin_login_page_and_static_files_are_served(client):
    assert client.get("/admin/login/").status_code == 200

"""The operator's console: create an account with folder mappings; the credential stays hidden."""

from __future__ import annotations

import pytest
from django.db import connection
from django.urls import reverse

from accounts.models import MailAccount
from tests.factories import MailAccountFactory, account_form_data

pytestmark = pytest.mark.django_db

SECRET = "pa55-word-never-shown"


def test_operator_creates_account_with_two_folder_mappings(admin_client):
    response = admin_client.post(reverse("admin:accounts_mailaccount_add"), account_form_data())
    assert response.status_code == 302, response.content.decode()[:2000]
    account = MailAccount.objects.get(account_id="billing")
    assert sorted(account.folders.values_list("alias", "role")) == [("inbox", "inbox"), ("sent", "sent")]
    with connection.cursor() as cursor:
        cursor.execute("SELECT credential_encrypted FROM accounts_mailaccount WHERE id = %s", [account.pk])
        (stored,) = cursor.fetchone()
    assert SECRET not in stored
    assert account.get_credential() == SECRET


def test_change_page_never_shows_the_credential(admin_client):
    admin_client.post(reverse("admin:accounts_mailaccount_add"), account_form_data())
    account = MailAccount.objects.get(account_id="billing")
    page = admin_client.get(reverse("admin:accounts_mailaccount_change", args=[account.pk])).content.decode()
    assert SECRET not in page
    assert account.credential_encrypted not in page
    assert "stored (encrypted)" in page


def test_blank_credential_on_change_keeps_the_stored_one(admin_client):
    admin_client.post(reverse("admin:accounts_mailaccount_add"), account_form_data())
    account = MailAccount.objects.get(account_id="billing")
    form = account_form_data(credential="", **{"folders-TOTAL_FORMS": "0"})
    form.pop("account_id")
    response = admin_client.post(reverse("admin:accounts_mailaccount_change", args=[account.pk]), form)
    assert response.status_code == 302
    account.refresh_from_db()
    assert account.get_credential() == SECRET


def test_new_account_without_credential_is_refused(admin_client):
    response = admin_client.post(reverse("admin:accounts_mailaccount_add"), account_form_data(credential=""))
    assert response.status_code == 200
    assert not MailAccount.objects.exists()


def test_two_folders_with_one_role_are_refused(admin_client):
    form = account_form_data(**{"folders-1-role": "inbox"})
    response = admin_client.post(reverse("admin:accounts_mailaccount_add"), form)
    assert response.status_code == 200
    assert not MailAccount.objects.exists()


def test_identifier_is_read_only_on_the_change_page(admin_client):
    account = MailAccountFactory(account_id="fixed")
    account.set_credential("x")
    account.save()
    form = _same_server(account, account_id="renamed", credential="", **{"folders-TOTAL_FORMS": "0"})
    response = admin_client.post(reverse("admin:accounts_mailaccount_change", args=[account.pk]), form)
    assert response.status_code == 302
    assert MailAccount.objects.get(pk=account.pk).account_id == "fixed"


def _same_server(account: MailAccount, **overrides: str) -> dict[str, str]:
    """The change form as posted for `account`, its server fields unchanged unless overridden."""
    return account_form_data(
        **{
            "imap_host": account.imap_host,
            "imap_port": str(account.imap_port),
            "security": account.security,
            "username": account.username,
            **overrides,
        }
    )


@pytest.mark.parametrize(
    "change",
    [
        {"imap_host": "imap.elsewhere.example"},
        {"imap_port": "1993"},
        {"username": "someone-else"},
        {"security": "starttls"},
    ],
    ids=["host", "port", "username", "security"],
)
def test_moving_an_account_to_another_server_needs_the_password_again(admin_client, change):
    account = MailAccountFactory(account_id="moved", security="tls", imap_host="imap.example.org")
    account.set_credential("stored-secret")
    account.save()
    form = _same_server(account, credential="", **{"folders-TOTAL_FORMS": "0"}, **change)
    response = admin_client.post(reverse("admin:accounts_mailaccount_change", args=[account.pk]), form)
    assert response.status_code == 200
    assert "Enter the password again" in response.content.decode()
    stored = MailAccount.objects.get(pk=account.pk)
    assert (stored.imap_host, stored.imap_port, stored.username, stored.security) == (
        account.imap_host,
        account.imap_port,
        account.username,
        account.security,
    )


def test_moving_an_account_with_the_password_typed_again_saves_both(admin_client):
    account = MailAccountFactory(account_id="moved", security="tls", imap_host="imap.example.org")
    account.set_credential("stored-secret")
    account.save()
    form = _same_server(
        account, imap_host="imap.elsewhere.example", credential="typed-again", **{"folders-TOTAL_FORMS": "0"}
    )
    response = admin_client.post(reverse("admin:accounts_mailaccount_change", args=[account.pk]), form)
    assert response.status_code == 302
    stored = MailAccount.objects.get(pk=account.pk)
    assert (stored.imap_host, stored.get_credential()) == ("imap.elsewhere.example", "typed-again")


def test_admin_login_page_and_static_files_are_served(client):
    assert client.get("/admin/login/").status_code == 200


def test_drafting_examples_heading_reads_as_a_plural(admin_client):
    account = MailAccountFactory()

    page = admin_client.get(reverse("admin:accounts_mailaccount_change", args=[account.pk])).content.decode()

    assert "Drafting examples (few-shot)" in page
    assert "(few-shot)s" not in page

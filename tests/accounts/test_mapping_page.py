"""The mapping page in words: the kind of each server folder, and how many messages it holds."""

from __future__ import annotations

import pytest
from django.urls import reverse

from accounts.services import connection
from tests.factories import MailAccountFactory
from tests.mailbox.imap_support import add_user

pytestmark = [pytest.mark.django_db, pytest.mark.dovecot]


def _message(n: int) -> bytes:
    headers = f"From: a@example.org\r\nSubject: m{n}\r\nMessage-ID: <map-{n}@example.org>\r\n"
    return (headers + "\r\nbody\r\n").encode()


def account_with_mail(dovecot):
    """An account on a fresh Dovecot user with three messages in INBOX and one in Junk."""
    user = add_user(dovecot)
    user.append("INBOX", [_message(n) for n in range(3)])
    user.append("Junk", [_message(9)])
    account = MailAccountFactory(imap_port=dovecot.imap_port, username=user.name)
    account.set_credential(user.password)
    account.save()
    return account


@pytest.fixture
def account(dovecot):
    return account_with_mail(dovecot)


def test_the_connection_test_counts_each_selectable_folder(account):
    report = connection.test_connection(account, timeout=5)

    assert report.ok, report.message
    counts = {folder.name: folder.messages for folder in report.folders}
    assert counts["INBOX"] == 3 and counts["Junk"] == 1 and counts["Sent"] == 0
    described = {folder.name: folder.described for folder in report.folders}
    assert described["Sent"] == "Sent mail"


def test_flags_read_as_words_and_tree_flags_are_left_out():
    parent = connection.RemoteFolder("Projects", ("\\HasChildren", "\\Noselect"), "", "projects")
    odd = connection.RemoteFolder("X", ("\\Sent", "$Custom"), "sent", "x")

    assert parent.described == "Holds no mail (a parent only)"
    assert odd.described == "Sent mail, $Custom"


def test_the_mapping_page_shows_kinds_in_words_and_message_counts(account, admin_client):
    response = admin_client.post(
        reverse("admin:accounts_mailaccount_test_connection", args=[account.pk]),
        {
            "imap_host": account.imap_host,
            "imap_port": str(account.imap_port),
            "security": account.security,
            "username": account.username,
            "password": "",
            "_test_connection": "Test connection",
        },
    )

    page = response.content.decode()
    assert response.status_code == 200
    assert ">Sent mail</td>" in page and ">Junk</td>" in page
    assert 'data-messages="3">3</td>' in page

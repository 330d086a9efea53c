"""The IMAP port follows the security choice, unless the operator typed a port of their own."""

from __future__ import annotations

import pytest
from django.urls import reverse

from accounts.models import MailAccount
from tests.factories import MailAccountFactory, account_form_data

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    ("security", "port", "stored"),
    [
        ("starttls", "993", 143),  # left at the implicit-TLS default: follows the choice
        ("tls", "993", 993),
        ("starttls", "1143", 1143),  # typed: kept
    ],
)
def test_a_new_account_takes_the_chosen_security_modes_port(admin_client, security, port, stored):
    form = account_form_data(security=security, imap_port=port)
    response = admin_client.post(reverse("admin:accounts_mailaccount_add"), form)
    assert response.status_code == 302, response.content.decode()[:2000]
    assert MailAccount.objects.get(account_id="billing").imap_port == stored


def _posted(account: MailAccount, **changes: str) -> dict[str, str]:
    saved = {
        "account_id": account.account_id,
        "display_name": account.display_name,
        "imap_host": account.imap_host,
        "imap_port": str(account.imap_port),
        "security": account.security,
        "username": account.username,
        "credential": "typed-again",
        "folders-TOTAL_FORMS": "0",
    }
    return account_form_data(**{**saved, **changes})


@pytest.mark.parametrize(("before", "after", "stored"), [("starttls", "tls", 993), ("tls", "starttls", 143)])
def test_switching_security_moves_a_port_left_at_the_old_default(admin_client, before, after, stored):
    old_port = 143 if before == "starttls" else 993
    account = MailAccountFactory(imap_host="imap.example.org", security=before, imap_port=old_port)
    url = reverse("admin:accounts_mailaccount_change", args=[account.pk])
    response = admin_client.post(url, _posted(account, security=after))
    assert response.status_code == 302, response.content.decode()[:2000]
    account.refresh_from_db()
    assert (account.security, account.imap_port) == (after, stored)


def test_switching_security_keeps_a_custom_port(admin_client):
    account = MailAccountFactory(imap_host="imap.example.org", security="tls", imap_port=10993)
    url = reverse("admin:accounts_mailaccount_change", args=[account.pk])
    response = admin_client.post(url, _posted(account, security="starttls"))
    assert response.status_code == 302
    account.refresh_from_db()
    assert (account.security, account.imap_port) == ("starttls", 10993)


def test_the_form_page_carries_the_script_that_moves_the_port(admin_client):
    response = admin_client.get(reverse("admin:accounts_mailaccount_add"))
    page = response.content.decode()
    assert 'ports = {tls: "993", starttls: "143", none: "143"}' in page

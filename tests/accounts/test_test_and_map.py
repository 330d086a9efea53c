"""One click on the account page tests the saved settings and maps the special folders."""

from __future__ import annotations

import pytest
from django.urls import reverse

from accounts.models import FolderMapping, Security
from tests.accounts.test_mapping_page import account_with_mail
from tests.factories import FolderMappingFactory, MailAccountFactory

pytestmark = [pytest.mark.django_db, pytest.mark.dovecot]


@pytest.fixture
def account(dovecot):
    return account_with_mail(dovecot)


def _one_click(admin_client, account):
    return admin_client.post(
        reverse("admin:accounts_mailaccount_test_and_map", args=[account.pk]), follow=True
    )


def test_the_account_page_offers_the_one_click_button(account, admin_client):
    page = admin_client.get(reverse("admin:accounts_mailaccount_change", args=[account.pk])).content.decode()
    assert reverse("admin:accounts_mailaccount_test_and_map", args=[account.pk]) in page
    assert 'id="test-and-map"' in page


def test_one_click_tests_and_maps_the_special_folders_with_their_counts(account, admin_client):
    response = _one_click(admin_client, account)

    assert response.redirect_chain[-1][0] == reverse("admin:accounts_mailaccount_change", args=[account.pk])
    said = [str(message) for message in response.context["messages"]]
    assert len(said) == 1 and said[0].startswith("Logged in to")
    assert "inbox (INBOX, 3 messages)" in said[0]
    assert "junk (Junk, 1 message, hidden from tools)" in said[0]
    mapped = {
        m.role: (m.remote_name, m.visible_to_tools) for m in FolderMapping.objects.filter(account=account)
    }
    assert mapped["inbox"] == ("INBOX", True)
    assert mapped["sent"] == ("Sent", True)
    assert mapped["junk"] == ("Junk", False)
    assert mapped["trash"] == ("Trash", False)


def test_a_second_click_maps_nothing_twice(account, admin_client):
    _one_click(admin_client, account)
    before = FolderMapping.objects.filter(account=account).count()
    said = [str(m) for m in _one_click(admin_client, account).context["messages"]]
    assert FolderMapping.objects.filter(account=account).count() == before
    assert "No new folder to map" in said[0]


def test_a_role_already_mapped_by_hand_is_left_alone(account, admin_client):
    FolderMappingFactory(account=account, alias="mine", remote_name="Archive", role="sent")
    _one_click(admin_client, account)
    assert FolderMapping.objects.get(account=account, role="sent").remote_name == "Archive"
    assert not FolderMapping.objects.filter(account=account, remote_name="Sent").exists()


def test_a_failure_shows_its_code_and_maps_nothing(dovecot, admin_client):
    account = MailAccountFactory(imap_port=dovecot.imaps_port, security=Security.TLS, username="alice")
    account.set_credential("alice-secret")
    account.save()

    said = [str(m) for m in _one_click(admin_client, account).context["messages"]]

    assert said[0].startswith("Connection test failed (61004): ")
    assert "certificate is not trusted" in said[0]
    assert not FolderMapping.objects.filter(account=account).exists()


def test_one_click_needs_post_and_change_permission(account, admin_client, client):
    url = reverse("admin:accounts_mailaccount_test_and_map", args=[account.pk])
    assert admin_client.get(url).status_code == 405
    assert client.post(url).status_code == 302  # to the login page
    assert not FolderMapping.objects.filter(account=account).exists()


def test_the_by_hand_page_has_a_visible_to_tools_box_that_is_kept(account, admin_client):
    url = reverse("admin:accounts_mailaccount_test_connection", args=[account.pk])
    pressed = admin_client.post(
        url,
        {
            "imap_host": account.imap_host,
            "imap_port": str(account.imap_port),
            "security": account.security,
            "username": account.username,
            "password": "",
            "_test_connection": "Test connection",
        },
    )
    assert "Visible to tools" in pressed.content.decode()
    forms = pressed.context["formset"].forms
    data = {"folder-TOTAL_FORMS": str(len(forms)), "folder-INITIAL_FORMS": "0"}
    for index, form in enumerate(forms):
        row = form.initial
        data[f"folder-{index}-remote_name"] = row["remote_name"]
        data[f"folder-{index}-alias"] = row["alias"]
        data[f"folder-{index}-role"] = row["role"]
        if row["remote_name"] in {"INBOX", "Junk", "Sent"}:
            data[f"folder-{index}-apply"] = "on"
        # The operator ticks Junk visible on purpose and hides Sent.
        if row["remote_name"] in {"INBOX", "Junk"}:
            data[f"folder-{index}-visible_to_tools"] = "on"

    assert admin_client.post(url, data).status_code == 302
    visible = dict(
        FolderMapping.objects.filter(account=account).values_list("remote_name", "visible_to_tools")
    )
    assert visible == {"INBOX": True, "Junk": True, "Sent": False}


def test_the_account_page_lists_visible_to_tools_for_each_mapping(account, admin_client):
    _one_click(admin_client, account)
    page = admin_client.get(reverse("admin:accounts_mailaccount_change", args=[account.pk])).content.decode()
    assert "Visible to tools" in page or "visible to tools" in page.lower()
    junk = FolderMapping.objects.get(account=account, role="junk")
    index = list(FolderMapping.objects.filter(account=account).order_by("alias")).index(junk)
    assert f'name="folders-{index}-visible_to_tools"' in page

    def box(name: str) -> str:
        before, after = page.split(f'name="{name}"', 1)
        return before.rsplit("<input", 1)[1] + after.split(">", 1)[0]

    assert "checked" not in box(f"folders-{index}-visible_to_tools")
    inbox = list(FolderMapping.objects.filter(account=account).order_by("alias")).index(
        FolderMapping.objects.get(account=account, role="inbox")
    )
    assert "checked" in box(f"folders-{inbox}-visible_to_tools")

"""The admin email pages leave an access entry naming the user, when they show mail content.

The email admin lives in mailbox, below audit: it announces what it showed by a signal
(mailbox.signals.mail_content_shown) and the audit app records it. The access trail's own
admin list is read-only.
"""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Permission, User
from django.urls import reverse

from accounts.models import AccountMembership, FolderRole, MembershipRole
from accounts.services.caller import MCP_KEY, Caller
from audit.access_models import AccessEntry
from audit.services.access_trail import record_access
from tests.factories import MailAccountFactory
from tests.mailbox.factories import EmailFactory, mapped_folder

pytestmark = pytest.mark.django_db


@pytest.fixture
def mail():
    account = MailAccountFactory(account_id="billing", display_name="Billing", access_trail_enabled=True)
    inbox = mapped_folder(account, "inbox", FolderRole.INBOX)
    return {
        "account": account,
        "claim": EmailFactory(folder=inbox, subject="Insurance claim settled", body="The insurer pays."),
        "lunch": EmailFactory(folder=inbox, subject="Lunch on Friday", body="Noon?"),
    }


def staff(username: str, account, *codenames: str) -> User:
    user = User.objects.create_user(username, password="x", is_staff=True)
    user.user_permissions.add(*Permission.objects.filter(codename__in=codenames))
    AccountMembership.objects.create(account=account, user=user, role=MembershipRole.OWNER)
    return user


def test_opening_an_emails_content_page_leaves_an_entry_naming_the_user(client, mail):
    client.force_login(staff("reader", mail["account"], "view_email", "view_mail_content"))

    page = client.get(reverse("admin:mailbox_email_change", args=[mail["claim"].pk]))

    assert page.status_code == 200 and "The insurer pays." in page.content.decode()
    (entry,) = AccessEntry.objects.all()
    assert (entry.channel, entry.action, entry.requester_kind, entry.requester, entry.owner) == (
        "admin",
        "email_change",
        "person",
        "reader",
        "",
    )
    assert [row.email_id for row in entry.emails.all()] == [mail["claim"].pk]


def test_a_content_list_page_records_the_emails_it_showed(client, mail):
    client.force_login(staff("reader", mail["account"], "view_email", "view_mail_content"))

    page = client.get(reverse("admin:mailbox_email_changelist"))

    assert page.status_code == 200 and "Lunch on Friday" in page.content.decode()
    (entry,) = AccessEntry.objects.all()
    assert entry.action == "email_list" and entry.requester == "reader"
    assert {row.email_id for row in entry.emails.all()} == {mail["claim"].pk, mail["lunch"].pk}


def test_pages_without_the_content_permission_show_no_content_and_leave_no_entry(client, mail):
    client.force_login(staff("counter", mail["account"], "view_email"))

    page = client.get(reverse("admin:mailbox_email_change", args=[mail["claim"].pk]))
    listing = client.get(reverse("admin:mailbox_email_changelist"))

    assert page.status_code == 200 and listing.status_code == 200
    assert "The insurer pays." not in page.content.decode()
    assert AccessEntry.objects.count() == 0


def test_an_email_outside_the_users_accounts_is_404_and_leaves_no_entry(client, mail):
    other = MailAccountFactory(account_id="other", display_name="Other", access_trail_enabled=True)
    client.force_login(staff("reader", other, "view_email", "view_mail_content"))

    page = client.get(reverse("admin:mailbox_email_change", args=[mail["claim"].pk]))

    assert page.status_code == 404
    assert AccessEntry.objects.count() == 0


def test_with_the_trail_off_the_content_page_leaves_no_entry(client, mail):
    mail["account"].access_trail_enabled = False
    mail["account"].save()
    client.force_login(staff("reader", mail["account"], "view_email", "view_mail_content"))

    assert client.get(reverse("admin:mailbox_email_change", args=[mail["claim"].pk])).status_code == 200
    assert AccessEntry.objects.count() == 0


def test_the_access_trail_is_listed_and_never_added_changed_or_deleted(admin_client, mail):
    record_access("mcp", "get_email_content", Caller(MCP_KEY, "assistant-key"), [mail["claim"].pk])
    entry = AccessEntry.objects.get()

    listing = admin_client.get(reverse("admin:audit_accessentry_changelist")).content.decode()
    detail = admin_client.get(reverse("admin:audit_accessentry_change", args=[entry.pk])).content.decode()

    assert "assistant-key" in listing and "get_email_content" in listing
    assert str(mail["claim"].pk) in detail
    assert "Insurance claim settled" not in detail, "the trail shows ids, never content"
    assert admin_client.get(reverse("admin:audit_accessentry_add")).status_code == 403
    assert admin_client.post(reverse("admin:audit_accessentry_delete", args=[entry.pk])).status_code == 403


def test_the_account_form_shows_the_access_trail_switch_and_window(admin_client, mail):
    page = admin_client.get(reverse("admin:accounts_mailaccount_change", args=[mail["account"].pk]))

    assert "access_trail_enabled" in page.content.decode()
    assert "access_trail_retention_days" in page.content.decode()

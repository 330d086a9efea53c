"""A person in the browser: Alice, owner of one account, sees its mail and its status row only.

The app (uvicorn) is real and reads the test database; the mail is stored rows, no IMAP.
Bob's account is beside hers; opening his email's URL is the same 404 as a URL of nothing.
"""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Permission, User
from playwright.sync_api import Page, expect

from accounts.models import AccountMembership, MembershipRole
from tests.browser import steps
from tests.browser.conftest import Screenshots
from tests.factories import MailAccountFactory
from tests.mailbox.factories import EmailFactory, mapped_folder
from tests.mcp.servers import Server

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.dovecot, pytest.mark.slow]

PASSWORD = "alice-reads-her-own-mail"
PERSON_PERMISSIONS = ["view_mailaccount", "view_email", "view_mail_content", "view_folder"]


def test_a_person_sees_only_her_accounts_mail_and_status_and_404_for_anothers(
    page: Page, app: Server, settings, screenshots: Screenshots
):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.PBKDF2PasswordHasher"]  # the server's
    one = MailAccountFactory(account_id="alice-account", display_name="Alice's account")
    two = MailAccountFactory(account_id="bob-account", display_name="Bob's account")
    EmailFactory(folder=mapped_folder(one, "inbox"), subject="Alice's invoice")
    bobs = EmailFactory(folder=mapped_folder(two, "inbox"), subject="Bob's invoice")
    alice = User.objects.create_user("alice", password=PASSWORD, is_staff=True)
    alice.user_permissions.add(*Permission.objects.filter(codename__in=PERSON_PERMISSIONS))
    AccountMembership.objects.create(account=one, user=alice, role=MembershipRole.OWNER)

    steps.log_in(page, "alice", PASSWORD)
    page.goto("/admin/mailbox/email/")
    expect(page.locator("#result_list")).to_contain_text("Alice's invoice")
    expect(page.locator("#result_list")).not_to_contain_text("Bob's invoice")
    expect(page.locator("#changelist-filter")).not_to_contain_text("Bob's account")
    screenshots.take(page, "her-emails")

    page.goto("/admin/status/")
    expect(steps.status_account_row(page, "alice-account")).to_be_visible()
    expect(steps.status_account_row(page, "bob-account")).to_have_count(0)
    expect(page.locator("#system-status")).not_to_contain_text("Bob's account")
    screenshots.take(page, "her-status")

    refused = page.goto(f"/admin/mailbox/email/{bobs.pk}/change/")
    assert refused is not None and refused.status == 404
    expect(page.locator("body")).not_to_contain_text("Bob's invoice")
    screenshots.take(page, "bobs-email-404")

"""Signing a mailbox in at its OAuth 2.0 provider, in Chromium, and synchronizing with the token.

The provider is the session's real authorization server (django-oauth-toolkit,
tests/oauth_server/): the browser leaves the account page for its login and consent pages
and comes back to the product's callback. The mailbox is on the session's OAuth Dovecot
(tests/oauth_dovecot.py), which introspects every token at the authorization server, so a
synchronization that stores the mail proves the token the browser obtained opens it over
XOAUTH2. The app (uvicorn) and the worker (Celery) are real and read the test database.

The authorization server is addressed as `localhost`, the app as 127.0.0.1: cookies are
kept per host, not per port, so on one host name the provider's session cookie would
replace the operator's admin session (same name, `sessionid`) and the sign-in could not
come back. The discovery document then names the issuer `http://localhost:<port>/o`, which
is what the registration says.
"""

from __future__ import annotations

from datetime import datetime
from email.message import EmailMessage
from email.utils import format_datetime, make_msgid

import pytest
from django.urls import reverse
from playwright.sync_api import Page, expect

from accounts.models import (
    AuthMethod,
    FolderMapping,
    FolderRole,
    MailAccount,
    OAuthGrant,
    OAuthRegistration,
    ProviderKind,
    SaslMechanism,
    Security,
)
from mailbox.models import Email
from tests.browser import steps
from tests.browser.conftest import Screenshots
from tests.mcp.servers import TEST_KEYRING, Server
from tests.oauth_dovecot import OAuthDovecot
from tests.oauth_server.fixtures import OAuthServer

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.dovecot, pytest.mark.slow]

# The generic provider's own scopes name no mail scope (there is no standard one): the
# registration adds the authorization server's, which Dovecot requires of every token.
SCOPES = "openid email imap offline_access"
SUBJECTS = ["Delivery note 118", "Meeting room booking", "Expense claim approved"]
SIGN_IN_BUTTON = "Sign in with your provider"
DENIED = "The sign-in was cancelled or refused at the provider; nothing was changed."


def message(subject: str, day: int) -> bytes:
    mail = EmailMessage()
    mail["From"] = "colleague@example.test"
    mail["To"] = "mailbox@example.test"
    mail["Subject"] = subject
    mail["Message-ID"] = make_msgid(domain="example.test")
    mail["Date"] = format_datetime(datetime(2026, 11, day, 9, 30).astimezone())
    mail.set_content(f"{subject}.\n")
    return mail.as_bytes()


@pytest.fixture(autouse=True)
def _the_apps_key_ring(settings) -> None:
    """Encrypt and decrypt in this process with the app's and the worker's key ring: the
    client secret written here is read there, the tokens written there are read here."""
    settings.MAILFATHOM_KEYRING = TEST_KEYRING


@pytest.fixture
def signed_out_account(oauth_server: OAuthServer, oauth_dovecot: OAuthDovecot, app: Server) -> MailAccount:
    """An OAuth account nobody has signed in yet, its user's INBOX holding three messages."""
    user = oauth_server.add_user(prefix="signin")
    for day, subject in enumerate(SUBJECTS, start=1):
        oauth_dovecot.append(user, message(subject, day))
    registration = OAuthRegistration(
        name="Test provider",
        provider=ProviderKind.GENERIC,
        client_id=oauth_server.client_id,
        issuer_url=oauth_server.issuer.replace("//127.0.0.1:", "//localhost:", 1),
        scopes=SCOPES,
    )
    registration.set_client_secret(oauth_server.client_secret)
    registration.full_clean()
    registration.save()
    account = MailAccount.objects.create(
        account_id="signed-in-mailbox",
        display_name="Signed-in mailbox",
        imap_host=oauth_dovecot.host,
        imap_port=oauth_dovecot.port,
        security=Security.NONE,
        username=user,
        auth_method=AuthMethod.OAUTH2,
        oauth_registration=registration,
        sasl_mechanism=SaslMechanism.XOAUTH2,
    )
    FolderMapping.objects.create(account=account, alias="inbox", remote_name="INBOX", role=FolderRole.INBOX)
    # What the product sends: the address the browser used (no MAILFATHOM_PUBLIC_BASE_URL).
    oauth_server.allow_redirect_uri(app.base + reverse("mailbox-sign-in-callback"))
    return account


def change_page(account: MailAccount) -> str:
    return reverse("admin:accounts_mailaccount_change", args=[account.pk])


def sign_in_status(page: Page):
    return page.locator(".field-sign_in_status")


def leaked(secrets: dict[str, str], texts: dict[str, str]) -> list[str]:
    """Which secret shows in which text, by name only: a failed assert must not print a token."""
    return [
        f"{kind} token in the {where}"
        for kind, token in secrets.items()
        for where, text in texts.items()
        if token in text
    ]


def test_a_mailbox_signed_in_at_its_provider_synchronizes_with_the_token(
    logged_in_page: Page,
    screenshots: Screenshots,
    app: Server,
    worker,
    oauth_server: OAuthServer,
    oauth_dovecot: OAuthDovecot,
    signed_out_account: MailAccount,
):
    page, account, user = logged_in_page, signed_out_account, signed_out_account.username
    page.goto(change_page(account))
    expect(sign_in_status(page)).to_contain_text("Not signed in yet.")
    screenshots.take(page, "account-not-signed-in")

    steps.start_mailbox_sign_in(page, account.pk, SIGN_IN_BUTTON)
    assert page.url.startswith(account.oauth_registration.issuer_url.removesuffix("/o") + "/accounts/login/")
    screenshots.take(page, "provider-login")

    steps.sign_in_at_provider(page, user, oauth_server.users[user])
    expect(page.locator("#authorizationForm")).to_contain_text("Read your mail over IMAP")
    screenshots.take(page, "provider-consent")

    steps.answer_consent(page, allow=True)
    assert page.url == app.base + change_page(account)
    expect(page.locator(".messagelist .success")).to_contain_text(
        f"Signed in as {user}. Synchronization uses this sign-in from now on."
    )
    expect(page.locator(".messagelist .warning")).to_have_count(0)  # the IMAP user signed in
    expect(sign_in_status(page)).to_contain_text(f"Signed in as {user} on ")
    expect(sign_in_status(page)).to_contain_text(f"scopes granted: {SCOPES};")
    expect(sign_in_status(page)).not_to_contain_text("<br>")  # markup, not text
    screenshots.take(page, "signed-in")

    grant = OAuthGrant.objects.get(account=account)
    assert grant.subject == user
    assert set(grant.scopes.split()) == set(SCOPES.split())
    assert grant.has_refresh_token
    secrets = {"access": grant.access_token(), "refresh": grant.refresh_token()}
    assert all(secrets.values())
    signed_in_page = page.content()

    steps.synchronize_from_account_page(page, account.pk)
    screenshots.take(page, "synchronization-queued")
    steps.wait_for_folder_counts(page, account.pk, {"INBOX": len(SUBJECTS)})
    screenshots.take(page, "synchronized")

    stored = Email.objects.filter(account=account)
    assert sorted(stored.values_list("subject", flat=True)) == sorted(SUBJECTS)
    # Dovecot let the user in by the token, over XOAUTH2 (the seeding logins use PLAIN).
    assert f"Login: user=<{user}>, method=XOAUTH2" in oauth_dovecot.log_text()
    # The token the browser got is the one the worker used: still current, never refreshed.
    assert OAuthGrant.objects.get(account=account).refreshed_at == grant.refreshed_at
    assert oauth_server.count_refreshes(user) == 0

    texts = {
        "signed-in page": signed_in_page,
        "last page": page.content(),
        "app log": app.log(),
        "worker log": worker.log.read_text(errors="replace"),
    }
    assert all(texts.values()), "a text is empty: nothing would be found in it"
    assert not leaked(secrets, texts)


def test_refusing_consent_at_the_provider_changes_nothing(
    logged_in_page: Page,
    screenshots: Screenshots,
    app: Server,
    oauth_server: OAuthServer,
    signed_out_account: MailAccount,
):
    page, account, user = logged_in_page, signed_out_account, signed_out_account.username

    steps.start_mailbox_sign_in(page, account.pk, SIGN_IN_BUTTON)
    steps.sign_in_at_provider(page, user, oauth_server.users[user])
    screenshots.take(page, "provider-consent")
    steps.answer_consent(page, allow=False)

    assert page.url == app.base + change_page(account)
    expect(page.locator(".messagelist .error")).to_have_text(DENIED)
    expect(page.locator(".messagelist .success")).to_have_count(0)
    expect(sign_in_status(page)).to_contain_text("Not signed in yet.")
    screenshots.take(page, "sign-in-refused")
    assert not OAuthGrant.objects.filter(account=account).exists()

"""Synchronization of mailboxes that sign in with OAuth 2.0, against real parts only.

The authorization server is django-oauth-toolkit in its own process (tests/oauth_server/);
the IMAP server is a Dovecot whose passdb asks that server about every token
(tests/oauth_dovecot.py). MailFathom reaches both as it would reach a provider: the
registration is "generic", configured by the server's issuer URL.
"""

from __future__ import annotations

import threading
import time
from datetime import timedelta

import pytest
from django.db import connection
from django.urls import reverse
from django.utils import timezone

from accounts.models import (
    AuthMethod,
    FolderRole,
    GrantState,
    MailAccount,
    OAuthGrant,
    OAuthRegistration,
    ProviderKind,
    SaslMechanism,
    Security,
)
from accounts.services import oauth_providers, oauth_tokens
from mailbox.models import Email, Folder
from mailbox.sync import engine, folder_state
from mailfathom.core.errors import Code
from tests.factories import FolderMappingFactory, MailAccountFactory, saved_registration

pytestmark = [pytest.mark.dovecot, pytest.mark.django_db(transaction=True)]

REDIRECT_URI = "http://127.0.0.1:9/sign-in/mailbox/callback/"  # never opened: flows read the code


def _message(number: int) -> bytes:
    return (
        f"From: sender{number}@example.test\r\nTo: owner@example.test\r\n"
        f"Message-ID: <oauth-{number}@example.test>\r\nSubject: Message {number}\r\n\r\n"
        f"Body of message {number}.\r\n"
    ).encode()


@pytest.fixture(autouse=True)
def _fresh_discovery():
    oauth_providers.forget_discovered()
    yield
    oauth_providers.forget_discovered()


@pytest.fixture
def delegated(oauth_server) -> OAuthRegistration:
    return saved_registration(
        oauth_server.client_secret,
        name="Test server",
        provider=ProviderKind.GENERIC,
        client_id=oauth_server.client_id,
        issuer_url=oauth_server.issuer,
        scopes="openid email imap offline_access",
    )


def _account(oauth_dovecot, registration, user: str, **fields) -> MailAccount:
    account = MailAccountFactory(
        imap_host=oauth_dovecot.host,
        imap_port=oauth_dovecot.port,
        security=Security.NONE,
        username=user,
        auth_method=AuthMethod.OAUTH2,
        oauth_registration=registration,
        **fields,
    )
    FolderMappingFactory(account=account, alias="inbox", remote_name="INBOX", role=FolderRole.INBOX)
    return account


def _signed_in(oauth_server, oauth_dovecot, registration, messages: int, **fields) -> tuple[str, MailAccount]:
    """A fresh user with `messages` in their INBOX, and an account signed in as them."""
    user = oauth_server.add_user()
    for number in range(messages):
        oauth_dovecot.append(user, _message(number))
    account = _account(oauth_dovecot, registration, user, **fields)
    oauth_tokens.store_sign_in(account, oauth_server.sign_in_scripted(user, REDIRECT_URI), user)
    return user, account


def _stored(account) -> list[str]:
    return sorted(Email.objects.filter(account=account).values_list("message_id", flat=True))


@pytest.mark.parametrize("mechanism", [SaslMechanism.XOAUTH2, SaslMechanism.OAUTHBEARER])
def test_a_signed_in_mailbox_synchronizes_over_either_mechanism(
    oauth_server, oauth_dovecot, delegated, mechanism
):
    _, account = _signed_in(oauth_server, oauth_dovecot, delegated, 4, sasl_mechanism=mechanism)
    run = engine.synchronize_account(account.pk, force=True)
    assert run.failure_code is None and run.skipped == ""
    assert _stored(account) == sorted(f"oauth-{n}@example.test" for n in range(4))


def test_an_expiring_token_is_refreshed_before_the_login(oauth_server, oauth_dovecot, delegated):
    user, account = _signed_in(oauth_server, oauth_dovecot, delegated, 2)
    before = OAuthGrant.objects.get(account=account)
    # Within the refresh margin by our clock, and expired at the server too.
    OAuthGrant.objects.filter(pk=before.pk).update(access_expires_at=timezone.now() + timedelta(minutes=1))
    oauth_server.expire_access_tokens(user)

    run = engine.synchronize_account(account.pk, force=True)

    assert run.failure_code is None
    assert len(_stored(account)) == 2
    after = OAuthGrant.objects.get(account=account)
    assert after.access_token() != before.access_token()
    assert after.refresh_token() != before.refresh_token()  # rotated, and the new one kept
    assert after.access_expires_at > timezone.now() + timedelta(minutes=30)
    assert oauth_server.count_refreshes(user) == 1


def test_a_token_expiring_mid_backfill_is_refreshed_and_nothing_is_lost_or_doubled(
    oauth_server, oauth_dovecot, delegated, monkeypatch
):
    """The server ends the session when the token expires (as Microsoft does with a BYE).

    The run logs in again: the token it holds is refused, a new one is fetched with the
    refresh token, and the folder continues after the last committed batch.
    """
    user, account = _signed_in(oauth_server, oauth_dovecot, delegated, 12)
    monkeypatch.setattr(engine, "BATCH_SIZE", 3)
    expired = threading.Event()

    def expire_after_the_first_batch(progress) -> None:
        if progress.done >= 3 and not expired.is_set():
            expired.set()
            oauth_server.expire_access_tokens(user)
            oauth_dovecot.kick(user)
            time.sleep(1.0)  # the BYE and the close reach the client a moment after doveadm returns

    run = engine.synchronize_account(account.pk, force=True, progress=expire_after_the_first_batch)

    assert expired.is_set()
    assert run.failure_code is None, run
    assert _stored(account) == sorted(f"oauth-{n}@example.test" for n in range(12))
    assert Email.objects.filter(account=account).count() == 12  # no message twice
    assert oauth_server.count_refreshes(user) == 1  # the session was lost and logged in again
    assert Folder.objects.get(account=account).last_failure_code is None


def test_a_withdrawn_grant_asks_for_a_new_sign_in_and_stops_the_retries(
    oauth_server, oauth_dovecot, delegated, admin_client
):
    user, account = _signed_in(oauth_server, oauth_dovecot, delegated, 3)
    assert engine.synchronize_account(account.pk, force=True).failure_code is None
    oauth_dovecot.append(user, _message(3))
    oauth_server.revoke_grant(user)  # consent withdrawn at the provider

    run = engine.synchronize_account(account.pk, force=True)

    assert run.failure_code == Code.SIGN_IN_NEEDED
    grant = OAuthGrant.objects.get(account=account)
    assert (grant.state, grant.state_code) == (GrantState.NEEDS_SIGN_IN, Code.SIGN_IN_NEEDED)
    assert Folder.objects.get(account=account).last_failure_code == Code.SIGN_IN_NEEDED
    # Said where an operator looks: the account's page and the status page, with the code.
    change_page = reverse("admin:accounts_mailaccount_change", args=[account.pk])
    assert "Needs sign-in again</strong> (61010)" in admin_client.get(change_page).content.decode()
    status = admin_client.get(reverse("system-status")).content.decode()
    assert "Needs sign-in again (61010)" in status and change_page in status
    assert "stopped until someone signs in" in status
    # No retry: polling leaves the account out, and a forced run does not even connect.
    assert account not in folder_state.due_accounts(timezone.now() + timedelta(days=1))
    refreshes = oauth_server.count_refreshes(user)
    opened: list[int] = []
    forced = engine.synchronize_account(
        account.pk, force=True, client_factory=lambda a: opened.append(a.pk) or engine._default_client(a)
    )
    assert forced.skipped.startswith("the account waits for someone to sign in again")
    assert opened == [] and oauth_server.count_refreshes(user) == refreshes

    # Signing in again continues where the last run stopped: only the new message is fetched.
    oauth_tokens.store_sign_in(account, oauth_server.sign_in_scripted(user, REDIRECT_URI), user)
    run = engine.synchronize_account(account.pk, force=True)
    assert run.failure_code is None and sum(f.stored for f in run.folders) == 1
    assert len(_stored(account)) == 4


def test_one_app_only_registration_synchronizes_two_mailboxes(oauth_server, oauth_dovecot):
    registration = saved_registration(
        oauth_server.app_client_secret,
        name="Company",
        provider=ProviderKind.GENERIC_APP,
        client_id=oauth_server.app_client_id,
        issuer_url=oauth_server.issuer,
        scopes="imap",
    )
    accounts = []
    for count in (2, 3):
        user = oauth_server.add_user()  # a mailbox of example.test, the registration's domain
        for number in range(count):
            oauth_dovecot.append(user, _message(number))
        accounts.append(_account(oauth_dovecot, registration, user))

    for account, count in zip(accounts, (2, 3), strict=True):
        run = engine.synchronize_account(account.pk, force=True)
        assert run.failure_code is None, run
        assert len(_stored(account)) == count
        grant = OAuthGrant.objects.get(account=account)
        assert grant.state == GrantState.ACTIVE and not grant.has_refresh_token
        assert grant.subject == "Company (app-only)"


def test_a_refused_registration_stops_the_retries_until_it_is_fixed(oauth_server, oauth_dovecot):
    registration = saved_registration(
        "not-the-secret",
        name="Company",
        provider=ProviderKind.GENERIC_APP,
        client_id=oauth_server.app_client_id,
        issuer_url=oauth_server.issuer,
        scopes="imap",
    )
    account = _account(oauth_dovecot, registration, oauth_server.add_user())

    run = engine.synchronize_account(account.pk, force=True)

    assert run.failure_code == Code.REGISTRATION_REFUSED
    assert OAuthGrant.objects.get(account=account).state == GrantState.REGISTRATION_REFUSED
    assert not MailAccount.objects.synchronized().filter(pk=account.pk).exists()


def test_two_workers_refreshing_at_once_leave_one_valid_token(
    oauth_server, oauth_dovecot, delegated, monkeypatch
):
    """Both find the token about to expire; the row lock makes the second use the first's.

    Without the lock both would redeem the same refresh token, and the server (rotation
    with reuse protection, as providers do) would revoke the whole grant. The provider is
    made slow, the second request slower than the first, so that without the lock the
    second worker would redeem the refresh token the first had just had rotated (the test
    server, like django-oauth-toolkit in general, forgives two requests landing within
    milliseconds of each other; providers do not promise that).
    """
    user, account = _signed_in(oauth_server, oauth_dovecot, delegated, 1)
    OAuthGrant.objects.filter(account=account).update(access_expires_at=timezone.now())
    real_fetch = oauth_tokens._fetch

    calls = iter((0.5, 2.0))

    def slow_provider(*args, **kwargs):
        time.sleep(next(calls))
        return real_fetch(*args, **kwargs)

    monkeypatch.setattr(oauth_tokens, "_fetch", slow_provider)
    start = threading.Barrier(2)
    tokens: list[str] = []
    failures: list[BaseException] = []

    def worker() -> None:
        try:
            start.wait(timeout=10)
            tokens.append(oauth_tokens.access_token(MailAccount.objects.get(pk=account.pk)))
        except BaseException as error:
            failures.append(error)
        finally:
            connection.close()

    threads = [threading.Thread(target=worker) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)

    assert failures == []
    assert len(tokens) == 2 and tokens[0] == tokens[1]
    assert oauth_server.count_refreshes(user) == 1
    grant = OAuthGrant.objects.get(account=account)
    assert grant.state == GrantState.ACTIVE and grant.access_token() == tokens[0]
    # The kept refresh token is the live one: the next refresh works and the mailbox opens.
    OAuthGrant.objects.filter(pk=grant.pk).update(access_expires_at=timezone.now())
    oauth_tokens.access_token(MailAccount.objects.get(pk=account.pk))
    assert oauth_server.count_refreshes(user) == 2
    assert engine.synchronize_account(account.pk, force=True).failure_code is None


def test_the_worker_renews_tokens_before_they_expire_and_notices_a_withdrawn_grant(
    oauth_server, oauth_dovecot, delegated
):
    from accounts.tasks import renew_oauth_tokens

    soon_user, soon = _signed_in(oauth_server, oauth_dovecot, delegated, 0)
    later_user, later = _signed_in(oauth_server, oauth_dovecot, delegated, 0)
    gone_user, gone = _signed_in(oauth_server, oauth_dovecot, delegated, 0)
    in_ten_minutes = timezone.now() + timedelta(minutes=10)
    OAuthGrant.objects.filter(account__in=[soon, gone]).update(access_expires_at=in_ten_minutes)
    oauth_server.revoke_grant(gone_user)

    assert renew_oauth_tokens() == 1

    assert OAuthGrant.objects.get(account=soon).access_expires_at > timezone.now() + timedelta(minutes=30)
    assert oauth_server.count_refreshes(soon_user) == 1
    assert oauth_server.count_refreshes(later_user) == 0  # not due: left alone
    assert OAuthGrant.objects.get(account=gone).state == GrantState.NEEDS_SIGN_IN

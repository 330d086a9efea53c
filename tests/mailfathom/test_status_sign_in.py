"""How accounts sign in, on the System status page and in /health; pauses that are not failures.

Grants are written as accounts.services.oauth_tokens leaves them (state, state code,
subject, encrypted tokens) and folders as synchronization records a failure (code, backoff).
"""

from __future__ import annotations

import html
import json
import re
from datetime import timedelta

import pytest
from django.contrib.auth.models import Permission, User
from django.urls import NoReverseMatch, reverse
from django.utils import timezone

from accounts import crypto
from accounts.models import (
    AuthMethod,
    GrantState,
    MailAccount,
    OAuthGrant,
    OAuthRegistration,
    ProviderKind,
    Security,
)
from mailbox.models import Folder
from mailfathom.core import heartbeat
from mailfathom.core.errors import Code
from tests import privacy
from tests.factories import MailAccountFactory, saved_registration
from tests.mailbox.factories import synced_folder
from tests.mailfathom.status_page import data_attributes

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("own_provider_health")]

ACCESS_TOKEN = "eyJ0eXAiOiJKV1Qi.access-canary-5b1d7e"  # test data: must never be shown
REFRESH_TOKEN = "M.C5_BAY.refresh-canary-0c9a44"
CLIENT_SECRET = "Qx8~client-secret-canary-e21f"
PASSWORD = "imap-password-canary-93d1"


@pytest.fixture
def registration() -> OAuthRegistration:
    return saved_registration(
        CLIENT_SECRET, name="Contoso mail", provider=ProviderKind.MICROSOFT, client_id="0000-client"
    )


def _oauth_account(registration: OAuthRegistration, account_id: str, **grant: object) -> MailAccount:
    """An OAuth 2.0 account; with `grant` fields, the grant its sign-in (or a run) left."""
    account = MailAccountFactory(
        account_id=account_id,
        auth_method=AuthMethod.OAUTH2,
        oauth_registration=registration,
        security=Security.TLS,
        imap_port=993,
    )
    if grant:
        OAuthGrant.objects.create(account=account, **grant)
    return account


def _signed_in(now, **extra: object) -> dict[str, object]:
    return {
        "state": GrantState.ACTIVE,
        "subject": "ops@contoso.example",
        "scopes": "https://outlook.office.com/IMAP.AccessAsUser.All offline_access",
        "signed_in_at": now - timedelta(days=3),
        "access_token_encrypted": crypto.encrypt(ACCESS_TOKEN),
        "refresh_token_encrypted": crypto.encrypt(REFRESH_TOKEN),
        "access_expires_at": now + timedelta(minutes=50),
        "refreshed_at": now - timedelta(minutes=10),
        **extra,
    }


def _waiting(now, state: str, code: int, **extra: object) -> dict[str, object]:
    return _signed_in(now, state=state, state_code=code, state_since=now, **extra)


def _text(page: str, element_id: str) -> str:
    """The text of the sign-in box #`element_id`, tags dropped and spaces collapsed."""
    found = re.search(rf'<div[^>]*\bid="{re.escape(element_id)}"[^>]*>(.*?)</div>', page, re.S)
    assert found, f"no element #{element_id}"
    return " ".join(re.sub(r"<[^>]+>", " ", found.group(1)).split()).replace(" :", ":")


def _page(client) -> str:
    response = client.get(reverse("system-status"))
    assert response.status_code == 200
    return html.unescape(response.content.decode())  # "provider's", as a reader sees it


def _health(client) -> tuple[int, dict]:
    response = client.get("/health")
    return response.status_code, json.loads(response.content)


def _at(instant) -> str:
    return instant.strftime("%Y-%m-%d %H:%M:%S") + " UTC"


# --- the System status page --------------------------------------------------------------


def test_a_password_account_says_password(admin_client):
    MailAccountFactory(account_id="plain")

    page = _page(admin_client)

    assert data_attributes(page, "status-sign-in-plain") == {
        "authentication": "password",
        "state": "password",
        "code": "",
    }
    assert _text(page, "status-sign-in-plain") == "Password"


def test_a_signed_in_account_names_who_and_until_when_its_token_is_valid(admin_client, registration):
    now = timezone.now()
    _oauth_account(registration, "contoso", **_signed_in(now))

    page = _page(admin_client)

    assert data_attributes(page, "status-sign-in-contoso") == {
        "authentication": "oauth2",
        "state": "signed_in",
        "code": "",
    }
    expires = OAuthGrant.objects.get().access_expires_at
    assert _text(page, "status-sign-in-contoso") == (
        f"OAuth 2.0 (Contoso mail): Signed in as ops@contoso.example, access token valid until {_at(expires)}"
    )


def test_an_expired_access_token_is_not_called_valid(admin_client, registration):
    now = timezone.now()
    _oauth_account(registration, "contoso", **_signed_in(now, access_expires_at=now - timedelta(minutes=5)))

    text = _text(_page(admin_client), "status-sign-in-contoso")

    assert "valid until" not in text
    assert "access token expired at" in text and "(the next run renews it)" in text


def test_needs_sign_in_again_is_stopped_not_failing_and_links_to_the_account(admin_client, registration):
    now = timezone.now()
    account = _oauth_account(registration, "contoso", **_waiting(now, GrantState.NEEDS_SIGN_IN, 61010))
    folder = synced_folder(account)
    # What the run that found the refusal left: a failure whose backoff has passed, which
    # for any other account reads "failing" (the next run retries).
    Folder.objects.filter(pk=folder.pk).update(
        last_failure_code=61010,
        last_failure_at=now,
        consecutive_failures=1,
        backoff_until=now - timedelta(seconds=1),
    )

    page = _page(admin_client)

    assert data_attributes(page, "status-sign-in-contoso")["state"] == "needs_sign_in"
    assert data_attributes(page, "status-sign-in-contoso")["code"] == "61010"
    text = _text(page, "status-sign-in-contoso")
    assert text.startswith(
        f"OAuth 2.0 (Contoso mail): Needs sign-in again (61010): {Code.SIGN_IN_NEEDED.sentence}"
    )
    box = re.search(r'id="status-sign-in-contoso".*?</div>', page, re.S).group(0)
    assert f'href="{reverse("admin:accounts_mailaccount_change", args=[account.pk])}"' in box
    assert data_attributes(page, "status-account-contoso")["state"] == "stopped"
    assert data_attributes(page, f"status-folder-{folder.pk}")["state"] == "stopped"
    assert "Synchronization is stopped until someone signs in on the account page." in page
    assert 'data-state="failing"' not in page and "backing off until" not in page


def test_a_refused_registration_is_stopped_until_the_registration_is_corrected(admin_client, registration):
    now = timezone.now()
    account = _oauth_account(registration, "contoso", **_waiting(now, GrantState.REGISTRATION_REFUSED, 61011))
    synced_folder(account)

    page = _page(admin_client)

    assert data_attributes(page, "status-sign-in-contoso") == {
        "authentication": "oauth2",
        "state": "registration_refused",
        "code": "61011",
    }
    assert f"Registration refused (61011): {Code.REGISTRATION_REFUSED.sentence}" in _text(
        page, "status-sign-in-contoso"
    )
    assert data_attributes(page, "status-account-contoso")["state"] == "stopped"
    assert "Synchronization is stopped until someone corrects the OAuth registration." in page


def test_consent_missing_reads_as_needs_sign_in_with_its_own_code(admin_client, registration):
    now = timezone.now()
    _oauth_account(registration, "contoso", **_waiting(now, GrantState.NEEDS_SIGN_IN, 61020))

    text = _text(_page(admin_client), "status-sign-in-contoso")

    assert f"Needs sign-in again (61020): {Code.CONSENT_MISSING.sentence}" in text


def test_an_account_nobody_signed_in_to_says_not_signed_in_yet(admin_client, registration):
    _oauth_account(registration, "fresh")
    # A run found nobody had signed in and marked the grant: stopped, but not "again".
    marked = _oauth_account(registration, "marked", state=GrantState.NEEDS_SIGN_IN, state_code=61010)
    synced_folder(marked)

    page = _page(admin_client)

    assert data_attributes(page, "status-sign-in-fresh") == {
        "authentication": "oauth2",
        "state": "not_signed_in",
        "code": "",
    }
    assert (
        _text(page, "status-sign-in-fresh")
        == "OAuth 2.0 (Contoso mail): Not signed in yet Sign in on the account page"
    )
    assert data_attributes(page, "status-sign-in-marked")["state"] == "not_signed_in"
    assert "again" not in _text(page, "status-sign-in-marked")
    assert data_attributes(page, "status-account-marked")["state"] == "stopped"


@pytest.mark.parametrize(
    ("code", "sentence"),
    [(61012, "paused by the provider's limit"), (61013, "paused at the account's daily download pace")],
    ids=["provider limit", "download pace"],
)
def test_a_paused_folder_says_when_it_resumes_instead_of_failing(admin_client, code, sentence):
    now = timezone.now()
    account = MailAccountFactory(account_id="gmail")
    paused, other = synced_folder(account, "inbox"), synced_folder(account, "sent")
    resumes = now + timedelta(minutes=40)
    Folder.objects.filter(pk=paused.pk).update(
        last_failure_code=code, last_failure_at=now, backoff_until=resumes
    )
    Folder.objects.filter(pk=other.pk).update(last_committed_at=now)

    page = _page(admin_client)

    assert data_attributes(page, f"status-folder-{paused.pk}")["state"] == "paused"
    assert f"{sentence}, resumes at {_at(Folder.objects.get(pk=paused.pk).backoff_until)}" in page
    assert data_attributes(page, "status-account-gmail")["state"] == "paused"
    assert 'data-state="failing"' not in page and "backing off until" not in page


def test_a_pause_that_has_ended_is_retried_like_any_failure(admin_client):
    now = timezone.now()
    folder = synced_folder(MailAccountFactory(account_id="gmail"))
    Folder.objects.filter(pk=folder.pk).update(
        last_failure_code=61012, backoff_until=now - timedelta(seconds=1)
    )

    page = _page(admin_client)

    assert data_attributes(page, f"status-folder-{folder.pk}")["state"] == "failing"
    assert ", resumes at" not in page


def test_another_failure_with_a_backoff_still_backs_off(admin_client):
    folder = synced_folder(MailAccountFactory(account_id="acme"))
    Folder.objects.filter(pk=folder.pk).update(
        last_failure_code=61001, backoff_until=timezone.now() + timedelta(minutes=3)
    )

    page = _page(admin_client)

    assert data_attributes(page, f"status-folder-{folder.pk}")["state"] == "backing-off"
    assert 'data-state="paused"' not in page


# --- /health -------------------------------------------------------------------------------


@pytest.fixture
def every_state(registration):
    """One served, synchronized account in each state /health counts, and two it does not."""
    now = timezone.now()
    _oauth_account(registration, "signed", **_signed_in(now))
    _oauth_account(registration, "again", **_waiting(now, GrantState.NEEDS_SIGN_IN, 61010))
    _oauth_account(registration, "refused", **_waiting(now, GrantState.REGISTRATION_REFUSED, 61011))
    _oauth_account(registration, "fresh")
    limited = synced_folder(MailAccountFactory(account_id="limited"))
    Folder.objects.filter(pk=limited.pk).update(
        last_failure_code=61012, backoff_until=now + timedelta(hours=1)
    )
    paced = synced_folder(_oauth_account(registration, "paced", **_signed_in(now)))
    Folder.objects.filter(pk=paced.pk).update(last_failure_code=61013, backoff_until=now + timedelta(hours=5))
    MailAccountFactory(account_id="plain")  # a password account neither waiting nor paused
    off = _oauth_account(registration, "off", **_waiting(now, GrantState.NEEDS_SIGN_IN, 61010))
    MailAccount.objects.filter(pk=off.pk).update(sync_enabled=False)  # nothing waits on it


COUNTS = {
    "signedIn": 1,
    "needsSignIn": 1,
    "registrationRefused": 1,
    "notSignedIn": 1,
    "pausedByProvider": 1,
    "pausedAtPace": 1,
    "waitingForSomeone": 2,
}


def test_health_counts_each_state_for_anyone_and_names_no_account(client, every_state):
    status, body = _health(client)

    assert status == 200
    assert body["parts"]["mailboxSignIn"] == {"status": "degraded", "required": False, **COUNTS}
    assert body["status"] == "degraded"
    raw = json.dumps(body)
    for account_id in ("signed", "again", "refused", "fresh", "limited", "paced"):
        assert f'"{account_id}"' not in raw


def test_health_lists_the_accounts_for_staff_who_may_view_them(admin_client, every_state):
    status, body = _health(admin_client)

    part = body["parts"]["mailboxSignIn"]
    assert status == 200
    assert {key: part[key] for key in COUNTS} == COUNTS
    assert part["accounts"] == [
        {"accountId": "again", "authentication": "oauth2", "state": "needs_sign_in", "code": 61010},
        {"accountId": "fresh", "authentication": "oauth2", "state": "not_signed_in", "code": None},
        {"accountId": "limited", "authentication": "password", "state": "paused_by_provider", "code": 61012},
        {"accountId": "paced", "authentication": "oauth2", "state": "paused_at_pace", "code": 61013},
        {"accountId": "refused", "authentication": "oauth2", "state": "registration_refused", "code": 61011},
        {"accountId": "signed", "authentication": "oauth2", "state": "signed_in", "code": None},
    ]


def test_staff_without_view_permission_on_accounts_get_counts_only(client, every_state):
    client.force_login(User.objects.create_user("desk", password="pw", is_staff=True))

    _, body = _health(client)

    assert "accounts" not in body["parts"]["mailboxSignIn"]
    staff = User.objects.get(username="desk")
    staff.user_permissions.add(Permission.objects.get(codename="view_mailaccount"))
    client.force_login(User.objects.get(pk=staff.pk))
    assert "accounts" in _health(client)[1]["parts"]["mailboxSignIn"]


def test_an_account_needing_sign_in_degrades_health_but_never_makes_it_503(client, registration):
    heartbeat.record(heartbeat.worker_role("celery"), "w")
    heartbeat.record(heartbeat.BEAT, "b")
    _oauth_account(registration, "signed", **_signed_in(timezone.now()))
    assert _health(client)[1]["status"] == "ok"  # signed in: nothing waits
    _oauth_account(registration, "again", **_waiting(timezone.now(), GrantState.NEEDS_SIGN_IN, 61010))

    status, body = _health(client)

    assert status == 200
    assert body["status"] == "degraded"
    assert body["parts"]["mailboxSignIn"]["status"] == "degraded"
    assert body["parts"]["mailboxSignIn"]["required"] is False


def test_a_paused_folder_is_not_a_failing_one_in_health(client):
    heartbeat.record(heartbeat.worker_role("celery"), "w")
    heartbeat.record(heartbeat.BEAT, "b")
    folder = synced_folder(MailAccountFactory())
    Folder.objects.filter(pk=folder.pk).update(
        last_failure_code=61012,
        last_committed_at=timezone.now(),
        backoff_until=timezone.now() + timedelta(hours=1),
    )

    status, body = _health(client)

    assert body["parts"]["lastSync"]["status"] == "ok"
    assert (body["parts"]["lastSync"]["failingFolders"], body["parts"]["lastSync"]["pausedFolders"]) == (0, 1)
    assert body["parts"]["mailboxSignIn"]["status"] == "ok"  # a pause ends by itself
    assert status == 200 and body["status"] == "ok", body


# --- privacy -------------------------------------------------------------------------------


def test_no_token_or_secret_reaches_any_page_or_health(client, admin_client, registration):
    now = timezone.now()
    privacy.remember(ACCESS_TOKEN, REFRESH_TOKEN, CLIENT_SECRET, PASSWORD)  # and never a log line
    signed = _oauth_account(registration, "signed", **_signed_in(now))
    waiting = _oauth_account(registration, "again", **_waiting(now, GrantState.NEEDS_SIGN_IN, 61010))
    synced_folder(signed)
    plain = MailAccountFactory(account_id="plain")
    plain.set_credential(PASSWORD)
    plain.save()
    assert OAuthGrant.objects.get(account=signed).access_token() == ACCESS_TOKEN  # the canaries are stored

    pages = {
        "status": admin_client.get(reverse("system-status")),
        "status live": admin_client.get(reverse("system-status-live")),
        "health anonymous": client.get("/health"),
        "health staff": admin_client.get("/health"),
        "account signed in": admin_client.get(reverse("admin:accounts_mailaccount_change", args=[signed.pk])),
        "account waiting": admin_client.get(reverse("admin:accounts_mailaccount_change", args=[waiting.pk])),
        "account list": admin_client.get(reverse("admin:accounts_mailaccount_changelist")),
    }
    # The registration's own admin pages, once a branch registers them.
    for name, args in (("changelist", []), ("change", [registration.pk]), ("add", [])):
        try:
            url = reverse(f"admin:accounts_oauthregistration_{name}", args=args)
        except NoReverseMatch:
            continue
        pages[f"registration {name}"] = admin_client.get(url)

    assert "OAuth 2.0 (Contoso mail): Signed in as ops@contoso.example" in _text(
        pages["status"].content.decode(), "status-sign-in-signed"
    )
    for name, response in pages.items():
        assert response.status_code == 200, name
        body = response.content.decode()
        for secret in (ACCESS_TOKEN, REFRESH_TOKEN, CLIENT_SECRET, PASSWORD):
            assert secret not in body, f"{name} shows {secret}"
        # Nor the encrypted form, from which a key-ring holder gets the token back.
        grant = OAuthGrant.objects.get(account=signed)
        for stored in (
            grant.access_token_encrypted,
            grant.refresh_token_encrypted,
            registration.client_secret_encrypted,
        ):
            assert stored not in body, f"{name} shows an encrypted token or secret"

"""OAuth registrations and an OAuth account in admin: secrets write-only, sign-in shown, never a token."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.core.management import call_command
from django.urls import reverse
from django.utils import timezone

from accounts import crypto
from accounts.models import AuthMethod, GrantState, MailAccount, OAuthGrant, OAuthRegistration
from accounts.services.oauth_registrations import problems
from tests.factories import MailAccountFactory, account_form_data, saved_registration

pytestmark = pytest.mark.django_db

CLIENT_SECRET = "client-secret-never-shown-7f3a"
ACCESS = "access-token-never-shown-91c2"
REFRESH = "refresh-token-never-shown-44d8"


def _registration(**fields: object) -> OAuthRegistration:
    return saved_registration(
        CLIENT_SECRET,
        name=str(fields.pop("name", "Contoso")),
        provider=str(fields.pop("provider", "microsoft")),
        client_id="00000000-aaaa-bbbb-cccc-000000000001",
        **fields,
    )


def test_the_registration_form_stores_the_secret_encrypted_and_never_shows_it(admin_client):
    response = admin_client.post(
        reverse("admin:accounts_oauthregistration_add"),
        {
            "name": "Contoso",
            "provider": "microsoft",
            "client_id": "00000000-aaaa-bbbb-cccc-000000000001",
            "client_secret": CLIENT_SECRET,
            "tenant": "contoso.onmicrosoft.com",
            "issuer_url": "",
            "scopes": "",
        },
    )
    assert response.status_code == 302, response.content.decode()[:1500]
    registration = OAuthRegistration.objects.get(name="Contoso")
    assert CLIENT_SECRET not in registration.client_secret_encrypted
    assert registration.get_client_secret() == CLIENT_SECRET
    page = admin_client.get(reverse("admin:accounts_oauthregistration_change", args=[registration.pk]))
    text = page.content.decode()
    assert CLIENT_SECRET not in text and registration.client_secret_encrypted not in text
    assert "stored (encrypted)" in text and "sign-in/mailbox/callback/" in text


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({"provider": "generic"}, "issuer_url"),  # generic without an issuer
        ({"provider": "microsoft_app", "tenant": "common"}, "tenant"),  # app-only needs its tenant
        ({"provider": "google", "tenant": "contoso"}, "tenant"),  # only Microsoft has tenants
        ({"provider": "generic", "issuer_url": "http://auth.example.org"}, "issuer_url"),  # http off loopback
    ],
)
def test_a_registration_that_cannot_work_is_refused_with_the_field_named(fields, field):
    from django.core.exceptions import ValidationError

    registration = OAuthRegistration(name="x", client_id="c", **fields)
    with pytest.raises(ValidationError) as refused:
        registration.clean()
    assert field in refused.value.message_dict


def test_an_oauth_account_is_saved_without_a_password_and_shows_its_sign_in_button(admin_client):
    registration = _registration()
    form = account_form_data(credential="", auth_method="oauth2", oauth_registration=str(registration.pk))
    response = admin_client.post(reverse("admin:accounts_mailaccount_add"), form)
    assert response.status_code == 302, response.content.decode()[:2000]
    account = MailAccount.objects.get(account_id="billing")
    assert account.auth_method == AuthMethod.OAUTH2 and not account.has_credential
    page = admin_client.get(reverse("admin:accounts_mailaccount_change", args=[account.pk])).content.decode()
    assert "Sign in with Microsoft" in page and "Not signed in yet." in page
    assert reverse("admin:accounts_mailaccount_sign_in", args=[account.pk]) in page


def test_the_sign_in_button_posts_and_a_get_is_refused(admin_client):
    registration = _registration()
    account = MailAccountFactory(auth_method=AuthMethod.OAUTH2, oauth_registration=registration)
    url = reverse("admin:accounts_mailaccount_sign_in", args=[account.pk])

    assert admin_client.get(url).status_code == 405
    # Microsoft's endpoints need no discovery: the POST is sent on to its authorization page.
    response = admin_client.post(url)
    assert response.status_code == 302
    assert response["Location"].startswith("https://login.microsoftonline.com/common/oauth2/v2.0/authorize?")


def test_oauth_without_a_registration_is_refused(admin_client):
    form = account_form_data(credential="", auth_method="oauth2")
    response = admin_client.post(reverse("admin:accounts_mailaccount_add"), form)
    assert response.status_code == 200
    assert "OAuth 2.0 needs a registration" in response.content.decode()
    assert not MailAccount.objects.exists()


def test_the_account_page_shows_who_signed_in_and_never_a_token(admin_client):
    registration = _registration(provider="google")
    account = MailAccountFactory(auth_method=AuthMethod.OAUTH2, oauth_registration=registration)
    grant = OAuthGrant.objects.create(
        account=account,
        subject="billing@example.org",
        scopes="https://mail.google.com/ openid email",
        signed_in_at=timezone.now(),
        access_token_encrypted=crypto.encrypt(ACCESS),
        access_expires_at=timezone.now() + timedelta(hours=1),
        refresh_token_encrypted=crypto.encrypt(REFRESH),
    )
    page = admin_client.get(reverse("admin:accounts_mailaccount_change", args=[account.pk])).content.decode()
    assert "Signed in as <strong>billing@example.org</strong>" in page
    assert "https://mail.google.com/" in page and "Sign in with Google" in page
    assert "&lt;br&gt;" not in page  # the button on a line of its own, no tag shown as text
    for secret in (
        ACCESS,
        REFRESH,
        CLIENT_SECRET,
        grant.access_token_encrypted,
        grant.refresh_token_encrypted,
    ):
        assert secret not in page
    OAuthGrant.objects.filter(pk=grant.pk).update(state=GrantState.NEEDS_SIGN_IN, state_code=61010)
    page = admin_client.get(reverse("admin:accounts_mailaccount_change", args=[account.pk])).content.decode()
    assert "Needs sign-in again</strong> (61010)" in page


def test_moving_an_oauth_account_to_another_server_forgets_its_tokens(admin_client):
    registration = _registration()
    form = account_form_data(credential="", auth_method="oauth2", oauth_registration=str(registration.pk))
    admin_client.post(reverse("admin:accounts_mailaccount_add"), form)
    account = MailAccount.objects.get(account_id="billing")
    OAuthGrant.objects.create(account=account, access_token_encrypted=crypto.encrypt(ACCESS))
    moved = account_form_data(
        credential="",
        auth_method="oauth2",
        oauth_registration=str(registration.pk),
        imap_host="imap.elsewhere.example",
        **{"folders-TOTAL_FORMS": "0"},
    )
    moved.pop("account_id")
    response = admin_client.post(reverse("admin:accounts_mailaccount_change", args=[account.pk]), moved)
    assert response.status_code == 302, response.content.decode()[:2000]
    assert not OAuthGrant.objects.filter(account=account).exists()


def test_an_account_waiting_for_a_person_is_left_out_of_synchronization():
    registration = _registration()
    waiting = MailAccountFactory(auth_method=AuthMethod.OAUTH2, oauth_registration=registration)
    signed_in = MailAccountFactory(auth_method=AuthMethod.OAUTH2, oauth_registration=registration)
    password = MailAccountFactory()
    OAuthGrant.objects.create(account=waiting, state=GrantState.NEEDS_SIGN_IN, state_code=61010)
    OAuthGrant.objects.create(account=signed_in)
    assert set(MailAccount.objects.synchronized()) == {signed_in, password}


def test_startup_names_each_registration_that_cannot_work(capsys):
    _registration(name="Fine", provider="microsoft")
    broken = OAuthRegistration.objects.create(
        name="No secret", provider="microsoft_app", client_id="c", tenant="x"
    )
    OAuthRegistration.objects.filter(pk=broken.pk).update(tenant="common")
    MailAccountFactory(account_id="orphan", auth_method=AuthMethod.OAUTH2)
    found = problems()
    assert any("'No secret'" in line and "no client secret" in line for line in found)
    assert any("'No secret'" in line and "tenant" in line for line in found)
    assert any("'orphan'" in line for line in found)
    assert not any("'Fine'" in line for line in found)
    call_command("check", "--database", "default")
    assert "mailfathom.W010" in capsys.readouterr().err


def test_rotating_the_key_ring_rewrites_secrets_and_tokens(settings):
    from cryptography.fernet import Fernet

    from accounts.services.credentials import rotate_credentials

    registration = _registration()
    account = MailAccountFactory(auth_method=AuthMethod.OAUTH2, oauth_registration=registration)
    OAuthGrant.objects.create(
        account=account,
        access_token_encrypted=crypto.encrypt(ACCESS),
        refresh_token_encrypted=crypto.encrypt(REFRESH),
    )
    new_key = Fernet.generate_key().decode()
    settings.MAILFATHOM_KEYRING = f"{new_key},{settings.MAILFATHOM_KEYRING}"
    rotate_credentials()
    settings.MAILFATHOM_KEYRING = new_key  # the old key dropped: everything must open with the new one
    registration.refresh_from_db()
    grant = OAuthGrant.objects.get(account=account)
    assert registration.get_client_secret() == CLIENT_SECRET
    assert (grant.access_token(), grant.refresh_token()) == (ACCESS, REFRESH)

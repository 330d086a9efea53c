"""Notification preferences in admin: each person their own row, operators every row; startup checks."""

from __future__ import annotations

import re

import pytest
from django.contrib.auth.models import Permission, User
from django.urls import reverse

from accounts.notification_models import NotificationPreference
from mailfathom.checks import check_notification_mail
from tests.configure import configure

pytestmark = pytest.mark.django_db

CHANGELIST = "admin:accounts_notificationpreference_changelist"
ADD = "admin:accounts_notificationpreference_add"


def _staff(name: str, *, operator: bool = False) -> User:
    user = User.objects.create_user(name, email=f"{name}@example.org", password="x", is_staff=True)
    if operator:
        user.user_permissions.add(Permission.objects.get(codename="see_every_account"))
    return user


def _form(**fields: object) -> dict[str, object]:
    return {"drafts_waiting": "on", "sync_failing": "on", "sign_in_needed": "on", "webhook_url": "", **fields}


def test_a_person_adds_their_own_preferences_and_sees_the_webhook_secret_once(client):
    rita = _staff("rita")
    client.force_login(rita)

    response = client.post(
        reverse(ADD), _form(by_mail="on", webhook_url="https://hooks.example.org/mf"), follow=True
    )

    preference = NotificationPreference.objects.get()
    assert preference.user == rita and preference.by_mail and preference.has_webhook_secret
    shown = re.search(r"shown this once: (mfwh_\S+) ", response.content.decode())
    assert shown and shown.group(1) == preference.webhook_secret()
    # Saving again keeps the secret and does not show it.
    change = reverse("admin:accounts_notificationpreference_change", args=[preference.pk])
    response = client.post(
        change, _form(by_mail="on", webhook_url="https://hooks.example.org/mf"), follow=True
    )
    assert "shown this once" not in response.content.decode()
    preference.refresh_from_db()
    assert preference.webhook_secret() == shown.group(1)
    # Only one row per person.
    assert client.get(reverse(ADD)).status_code == 403


def test_a_plain_http_webhook_is_refused(client):
    client.force_login(_staff("rita"))
    response = client.post(reverse(ADD), _form(webhook_url="http://hooks.example.org/mf"))
    assert response.status_code == 200
    assert "must be reached over https" in response.content.decode()
    assert not NotificationPreference.objects.exists()


def test_a_person_sees_and_changes_only_their_own_row(client):
    rita, sam = _staff("rita"), _staff("sam")
    theirs = NotificationPreference.objects.create(user=sam, by_mail=True)
    NotificationPreference.objects.create(user=rita)
    client.force_login(rita)

    listed = client.get(reverse(CHANGELIST)).content.decode()
    assert "Notifications of rita" in listed and "Notifications of sam" not in listed
    change = reverse("admin:accounts_notificationpreference_change", args=[theirs.pk])
    assert client.get(change).status_code in {302, 403, 404}
    client.post(change, _form())
    theirs.refresh_from_db()
    assert theirs.by_mail


def test_a_person_cannot_ask_for_every_account(client):
    rita = _staff("rita")
    client.force_login(rita)
    client.post(reverse(ADD), _form(every_account="on", user=str(_staff("sam").pk)))
    preference = NotificationPreference.objects.get()
    assert preference.user == rita and not preference.every_account


def test_an_operator_sees_every_row(client):
    NotificationPreference.objects.create(user=_staff("sam"))
    client.force_login(_staff("olga", operator=True))
    listed = client.get(reverse(CHANGELIST)).content.decode()
    assert "Notifications of sam" in listed


def test_mail_needs_a_from_address_and_tls_off_loopback(settings):
    configure(settings, email_host="smtp.example.org", email_from="", email_security="none")
    assert {error.id for error in check_notification_mail()} == {"mailfathom.E040", "mailfathom.E041"}
    configure(settings, email_host="127.0.0.1", email_from="mf@example.org", email_security="none")
    assert check_notification_mail() == []
    configure(settings, email_host="", email_from="")
    assert check_notification_mail() == []

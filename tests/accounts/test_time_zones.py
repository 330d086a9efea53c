"""Each person's time zone: chosen on their own page, applied to every time the admin shows."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from django.contrib.auth.models import User
from django.urls import reverse

from accounts.models import UserPreference
from mailbox.models import Email
from mailbox.services.store import IncomingMessage, store_messages
from tests.mailbox.factories import synced_folder

pytestmark = pytest.mark.django_db

RECEIVED = datetime(2026, 7, 1, 10, 30, tzinfo=UTC)  # 12:30 in Berlin (summer time)


def _email() -> Email:
    folder = synced_folder()
    raw = b"From: a@example.org\r\nSubject: hello\r\nMessage-ID: <tz@example.org>\r\n\r\nbody\r\n"
    incoming = IncomingMessage(uidvalidity=1, uid=1, size=len(raw), received_at=RECEIVED, raw=raw)
    store_messages(folder, [incoming])
    return Email.objects.get(folder=folder)


def _received_cell(client) -> str:
    page = client.get(reverse("admin:mailbox_email_changelist")).content.decode()
    return page.split('class="field-received"', 1)[1].split("</", 1)[0]


def test_times_are_in_the_deployment_zone_until_a_person_chooses_theirs(admin_client, admin_user):
    _email()
    assert "2026-07-01 10:30" in _received_cell(admin_client)

    UserPreference.objects.create(user=admin_user, time_zone="Europe/Berlin")

    assert "2026-07-01 12:30" in _received_cell(admin_client)


def test_a_person_saves_their_zone_on_their_own_page(admin_client, admin_user):
    page = admin_client.get(reverse("admin:index")).content.decode()
    assert 'id="time-zone-link"' in page

    response = admin_client.post(reverse("time-zone"), {"time_zone": "Asia/Tokyo"})

    assert response.status_code == 302
    assert UserPreference.objects.get(user=admin_user).time_zone == "Asia/Tokyo"
    assert "Asia/Tokyo" in admin_client.get(reverse("time-zone")).content.decode()


def test_an_unknown_zone_is_refused_and_an_empty_one_means_the_deployments(admin_client, admin_user):
    refused = admin_client.post(reverse("time-zone"), {"time_zone": "Mars/Olympus"})

    assert refused.status_code == 200 and "Unknown time zone" in refused.content.decode()
    assert UserPreference.objects.get(user=admin_user).time_zone == ""
    assert admin_client.post(reverse("time-zone"), {"time_zone": ""}).status_code == 302


def test_one_persons_zone_is_not_anothers(client, admin_user):
    _email()
    UserPreference.objects.create(user=admin_user, time_zone="Europe/Berlin")
    other = User.objects.create_superuser("other", "other@example.invalid", "pw")
    client.force_login(other)

    assert "2026-07-01 10:30" in _received_cell(client)

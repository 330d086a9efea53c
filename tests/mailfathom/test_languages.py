"""The admin in the browser's language: German beside English, English when asked for neither."""

from __future__ import annotations

import pytest
from django.urls import reverse

from tests.factories import MailAccountFactory

pytestmark = pytest.mark.django_db


def test_a_german_browser_gets_django_admin_and_our_pages_in_german(admin_client):
    index = admin_client.get(reverse("admin:index"), HTTP_ACCEPT_LANGUAGE="de-DE,de;q=0.9").content.decode()
    status = admin_client.get(reverse("system-status"), HTTP_ACCEPT_LANGUAGE="de").content.decode()

    assert '<html lang="de"' in index
    assert "Abmelden" in index  # Django's own catalog
    assert "Betrieb" in index and "Systemstatus" in index  # ours (locale/de)
    assert "<title>Systemstatus" in status
    for heading in ("Prozesse", "Synchronisierung", "Einbettung", "Beantwortung"):
        assert f"<h2>{heading}</h2>" in status


def test_english_stays_the_default_for_english_or_no_preference(admin_client):
    for header in ({}, {"HTTP_ACCEPT_LANGUAGE": "en-US,en;q=0.9"}, {"HTTP_ACCEPT_LANGUAGE": "fr"}):
        status = admin_client.get(reverse("system-status"), **header).content.decode()
        assert "<h2>Processes</h2>" in status and "Prozesse" not in status


def test_the_account_page_and_folder_list_speak_german(admin_client):
    account = MailAccountFactory()

    page = admin_client.get(
        reverse("admin:accounts_mailaccount_change", args=[account.pk]), HTTP_ACCEPT_LANGUAGE="de"
    ).content.decode()

    assert "Verbindung testen und Ordner zuordnen" in page
    assert "Jetzt synchronisieren" in page

"""The System status page's attachment text section: emails waiting for extraction, the
attachments by outcome, the pass's measured rate and when the backlog empties at it.

The same counts /health reports as attachmentTextBacklog, read by the same use case; the
page shows counts only, never an attachment's name or its text.
"""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from mailbox.extraction import ENGINE_VERSION
from mailbox.models import AttachmentExtraction, AttachmentText, Availability, Email
from mailfathom.status.services import attachment_text_progress
from tests.factories import MailAccountFactory
from tests.mailbox.factories import EmailFactory, mapped_folder
from tests.mailfathom.status_page import data_attributes, status_page

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("own_provider_health")]

OUTCOMES = ("ok", "too_large", "encrypted", "unreadable", "timed_out", "unsupported")


@pytest.fixture
def inbox():
    return mapped_folder(MailAccountFactory(), "inbox")


def _outcomes(page: str) -> dict[str, int]:
    return {
        outcome: int(data_attributes(page, f"status-attachment-outcome-{outcome}")["count"])
        for outcome in OUTCOMES
    }


def _waiting(folder, count: int) -> list:
    return [EmailFactory(folder=folder, attachment_count=2) for _ in range(count)]


def _extracted(folder, outcomes: list[str], *, ago: timedelta = timedelta(0)) -> object:
    """An email whose attachments the pass has been through, one row per outcome given."""
    at = timezone.now() - ago
    email = EmailFactory(folder=folder, attachment_count=len(outcomes))
    secret = "Confidential takeover figures"
    Email.objects.filter(pk=email.pk).update(attachment_text=secret if "ok" in outcomes else "")
    for part, outcome in enumerate(outcomes, start=2):
        AttachmentText.objects.create(
            email=email,
            part_index=part,
            file_name="merger-secret-plan.xlsx",
            outcome=outcome,
            characters=len(secret) if outcome == "ok" else 0,
            extracted_at=at,
            engine_version=ENGINE_VERSION,
        )
    AttachmentExtraction.objects.create(
        email=email, engine_version=ENGINE_VERSION, extracted_at=at, attachments=len(outcomes)
    )
    return email


def test_the_section_counts_waiting_mail_and_attachments_by_outcome_never_names(admin_client, inbox):
    _waiting(inbox, 3)
    EmailFactory(folder=inbox)  # no attachment: nothing to wait for
    EmailFactory(folder=inbox, attachment_count=1, availability=Availability.EXCEEDED_SIZE_LIMIT)
    _extracted(inbox, ["ok", "ok", "encrypted"])
    _extracted(inbox, ["too_large", "timed_out", "unsupported", "ok"])

    page = status_page(admin_client)

    assert data_attributes(page, "status-attachment-text") == {
        "active": "true",
        "pending": "3",
        "attachments": "7",
        "done-last-hour": "2",
    }
    assert _outcomes(page) == {
        "ok": 3,
        "too_large": 1,
        "encrypted": 1,
        "unreadable": 0,
        "timed_out": 1,
        "unsupported": 1,
    }
    assert "3 emails with attachments wait for extraction" in page
    assert "merger-secret-plan" not in page and "takeover" not in page


def test_the_page_and_health_read_the_same_backlog(admin_client, client, inbox):
    _waiting(inbox, 4)
    _extracted(inbox, ["ok", "unreadable"])
    _extracted(inbox, ["unreadable"])

    section = data_attributes(status_page(admin_client), "status-attachment-text")
    outcomes = _outcomes(status_page(admin_client))
    health = client.get(reverse("health")).json()["parts"]["attachmentTextBacklog"]

    assert int(section["pending"]) == health["pending"] == 4
    assert {name: count for name, count in outcomes.items() if count} == health["outcomes"]


def test_the_rate_is_what_the_pass_did_in_the_last_hour_and_says_when_the_backlog_empties(
    admin_client, inbox
):
    _waiting(inbox, 20)
    _extracted(inbox, ["ok"], ago=timedelta(hours=3))  # outside the hour: not in the rate
    for minutes in range(10, 0, -1):  # ten emails over the last ten minutes: one a minute
        _extracted(inbox, ["ok"], ago=timedelta(minutes=minutes))

    progress = attachment_text_progress(now=timezone.now())
    page = status_page(admin_client)

    assert progress.done_in_window == 10
    assert progress.per_minute == pytest.approx(1.0, rel=0.01)
    assert progress.remaining_seconds == pytest.approx(20 * 60, rel=0.01)
    assert data_attributes(page, "status-attachment-text")["done-last-hour"] == "10"
    assert "1.0 emails per minute since" in page
    assert re.search(r'id="status-attachment-text-eta">in about (19|20) min( \d+ s)? at this rate<', page)


def test_a_rate_is_not_measured_over_a_few_minutes_and_none_in_the_hour_is_no_progress(admin_client, inbox):
    _waiting(inbox, 5)
    _extracted(inbox, ["ok"], ago=timedelta(minutes=1))

    page = status_page(admin_client)
    assert attachment_text_progress().per_minute is None
    assert "not measured yet" in page
    assert re.search(r'id="status-attachment-text-eta">unknown until a rate is measured<', page)

    AttachmentExtraction.objects.update(extracted_at=timezone.now() - timedelta(hours=2))
    page = status_page(admin_client)
    assert attachment_text_progress().per_minute == 0.0
    assert "no email extracted in the last hour" in page
    assert re.search(r'id="status-attachment-text-eta">not at this rate: nothing was extracted', page)


def test_an_empty_mailbox_shows_every_outcome_at_zero_and_nothing_waiting(admin_client):
    page = status_page(admin_client)

    assert data_attributes(page, "status-attachment-text") == {
        "active": "true",
        "pending": "0",
        "attachments": "0",
        "done-last-hour": "0",
    }
    assert _outcomes(page) == dict.fromkeys(OUTCOMES, 0)
    assert re.search(r'id="status-attachment-text-eta">nothing is waiting<', page)
    assert "status-attachment-text-inactive" not in page


def test_no_kind_switched_on_is_said(admin_client, mailfathom_settings, inbox):
    mailfathom_settings(attachment_text_kinds="")
    _waiting(inbox, 2)

    page = status_page(admin_client)

    assert data_attributes(page, "status-attachment-text")["active"] == "false"
    assert 'id="status-attachment-text-inactive"' in page


def test_the_refresh_fragment_carries_the_section(admin_client, inbox):
    _waiting(inbox, 1)

    fragment = admin_client.get(reverse("system-status-live")).content.decode()

    assert data_attributes(fragment, "status-attachment-text")["pending"] == "1"


def test_the_section_costs_the_same_queries_for_few_emails_or_many(admin_client, inbox):
    _waiting(inbox, 1)
    _extracted(inbox, ["ok"])
    status_page(admin_client)
    with CaptureQueriesContext(connection) as few:
        status_page(admin_client)
    _waiting(inbox, 30)
    for _ in range(10):
        _extracted(inbox, ["ok", "encrypted", "unsupported"], ago=timedelta(minutes=5))
    status_page(admin_client)  # the stored mail makes the mail chart's past days be counted again, once
    with CaptureQueriesContext(connection) as many:
        page = status_page(admin_client)

    assert len(many.captured_queries) == len(few.captured_queries)
    assert data_attributes(page, "status-attachment-text")["pending"] == "31"

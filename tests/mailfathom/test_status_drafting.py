"""The System status page's drafting section: per account on or off, mail waiting at the gate,
the last run and what it did, refusals by outcome, when the next run is due; and drafting's
allowance, read from its own ledger in the real Redis under a namespace of the test's own."""

from __future__ import annotations

import re
import uuid
from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from accounts.models import FolderRole
from answering.drafting.gate import count_awaiting_a_draft, messages_awaiting_a_draft
from answering.ledger import drafting_ledger
from answering.models import AttemptOutcome, DraftAttempt, DraftRun, RunTrigger
from answering.services.drafting_status import drafting_status
from tests.factories import MailAccountFactory
from tests.mailbox.factories import EmailFactory, mapped_folder
from tests.mailfathom.status_page import data_attributes

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("own_provider_health")]


def _waiting(account, ages_in_days: list[float]) -> list:
    inbox = mapped_folder(account, "inbox", role=FolderRole.INBOX)
    now = timezone.now()
    return [
        EmailFactory(folder=inbox, received_at=now - timedelta(days=age), thread_id=uuid.uuid4())
        for age in ages_in_days
    ]


def test_the_counting_selector_counts_what_the_gate_would_hand_each_account():
    week = MailAccountFactory(drafting_enabled=True, drafting_window_days=7)
    day = MailAccountFactory(drafting_enabled=True, drafting_window_days=1)
    empty = MailAccountFactory(drafting_enabled=True)
    _waiting(week, [0.5, 3, 10])
    refused = _waiting(day, [0.2, 0.5, 3])[0]
    DraftAttempt.objects.create(
        account=day, email=refused, stage="classify", outcome=AttemptOutcome.CLASSIFY_REFUSED
    )

    counts = count_awaiting_a_draft([week, day, empty])

    assert counts == {week.pk: 2, day.pk: 1, empty.pk: 0}
    for account in (week, day, empty):
        assert counts[account.pk] == len(messages_awaiting_a_draft(account, 500))


def test_the_section_shows_each_account_its_last_run_refusals_and_next_run(admin_client, mailfathom_settings):
    mailfathom_settings(drafting_max_runs_per_period=40, drafting_max_tokens_per_period=50000)
    drafting_ledger().admit()
    drafting_ledger().charge(1200)
    oak = MailAccountFactory(account_id="oak", drafting_enabled=True)
    elm = MailAccountFactory(account_id="elm", drafting_enabled=False)
    emails = _waiting(oak, [0.1, 0.2, 0.3])
    DraftAttempt.objects.create(
        account=oak, email=emails[0], stage="generate", outcome=AttemptOutcome.STOPPED_ON_LENGTH
    )
    began = timezone.now() - timedelta(minutes=5)
    DraftRun.objects.create(
        account=oak,
        trigger=RunTrigger.SCHEDULE,
        started_at=began,
        ended_at=began + timedelta(seconds=40),
        considered=4,
        drafted=3,
        refused={"stopped_on_length": 1},
    )

    page = admin_client.get(reverse("system-status")).content.decode()

    assert data_attributes(page, "status-drafting-allowance") == {"runs": "1", "tokens": "1200"}
    assert "1 of 40 (2.5 %)" in page
    assert data_attributes(page, "status-drafting-oak") == {
        "enabled": "true",
        "waiting": "2",
        "refused": "1",
        "last-trigger": "schedule",
    }
    assert data_attributes(page, "status-drafting-elm")["enabled"] == "false"
    assert "4 considered, 3 drafted, 1 refused" in page and "took 40 s" in page
    assert "stopped_on_length: 1" in page
    oak_status = next(a for a in drafting_status().accounts if a.account_id == "oak")
    assert oak_status.next_run_at == began + timedelta(seconds=900)  # the beat entry's 15 minutes
    assert re.search(r">in (10 min|9 min \d+ s)<", page)  # seconds pass between the run row and the page
    assert elm.pk not in {a.account_pk for a in drafting_status().accounts if a.next_run_at}


def test_a_run_in_progress_reads_as_running_and_a_page_with_many_accounts_costs_the_same_queries(
    admin_client,
):
    first = MailAccountFactory(drafting_enabled=True)
    DraftRun.objects.create(account=first, trigger=RunTrigger.DRAFT_NOW, started_at=timezone.now())
    with CaptureQueriesContext(connection) as one:
        page = admin_client.get(reverse("system-status-live")).content.decode()
    for _ in range(4):
        other = MailAccountFactory(drafting_enabled=True)
        _waiting(other, [0.1])
        DraftRun.objects.create(account=other, trigger=RunTrigger.COMMAND, started_at=timezone.now())
    with CaptureQueriesContext(connection) as many:
        admin_client.get(reverse("system-status-live"))

    assert "Draft now (admin), began" in page and "running" in page
    assert len(many.captured_queries) == len(one.captured_queries)

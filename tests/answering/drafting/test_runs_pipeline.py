"""Drafting runs over the real pipeline: compose_draft against the scripted OpenAI-compatible
server (the real `openai` client), real PostgreSQL and Redis; the shop of support.py, its
answered mail moved into the window and threaded by the backfill."""

from __future__ import annotations

import uuid
from datetime import timedelta

import pytest
from django.utils import timezone

from answering.drafting.runs import draft_account
from answering.models import AttemptOutcome, Draft, DraftAttempt, DraftStatus
from mailbox.models import Email
from mailbox.services.threads import thread_unthreaded
from tests.answering.drafting.support import CLASSIFY, GENERATE, LETTER
from tests.configure import configure
from tests.mailbox.factories import EmailFactory
from tests.providers.openai_server import status, text

pytestmark = pytest.mark.django_db


@pytest.fixture
def waiting(shop):
    """The shop with drafting on, its mail threaded, and the answered mail an hour old."""
    now = timezone.now()
    while thread_unthreaded(shop.account.pk):
        pass
    Email.objects.filter(pk=shop.earlier.pk).update(received_at=now - timedelta(days=2))
    Email.objects.filter(pk=shop.answered.pk).update(received_at=now - timedelta(hours=1))
    shop.account.drafting_enabled = True
    shop.account.save()
    return shop


def test_a_run_stores_the_pipelines_draft_pending_and_the_next_run_leaves_it(model, waiting):
    summary = draft_account(waiting.account)

    assert (summary.considered, summary.drafted, summary.skipped) == (1, 1, "")
    draft = Draft.objects.get(email=waiting.answered)
    assert draft.status == DraftStatus.PENDING and draft.body == LETTER.strip()
    assert (draft.intent, draft.language, draft.model_alias) == ("inquiry", "en", "scripted")
    assert draft.source_ids[0] == waiting.source.pk
    assert set(draft.tokens) == {"classify", "condense", "generate"}

    again = draft_account(waiting.account)

    assert again.considered == 0 and len(model.requests[CLASSIFY]) == 1


def test_a_classification_the_pipeline_refuses_is_recorded_and_not_retried_next_run(model, waiting):
    model.script(CLASSIFY, text("I think this is an inquiry."))

    summary = draft_account(waiting.account)

    assert summary.refused == {AttemptOutcome.CLASSIFY_REFUSED: 1}
    attempt = DraftAttempt.objects.get(email=waiting.answered)
    assert (attempt.stage, attempt.outcome) == ("classify", AttemptOutcome.CLASSIFY_REFUSED)
    assert not Draft.objects.exists() and GENERATE not in model.requests

    draft_account(waiting.account)

    assert len(model.requests[CLASSIFY]) == 1


def test_the_run_stops_when_the_period_ledger_refuses_the_pipeline(model, waiting, settings):
    configure(settings, drafting_max_runs_per_period=1)
    second = EmailFactory(
        folder=waiting.answered.folder,
        subject="Do you deliver on Saturdays?",
        body="Hello, do you deliver on Saturdays? Regards, Tom",
        received_at=timezone.now() - timedelta(minutes=30),
        thread_id=uuid.uuid4(),
    )

    summary = draft_account(waiting.account)

    assert (summary.drafted, summary.stopped_by) == (1, "ledger")
    attempt = DraftAttempt.objects.get(email=second)
    assert attempt.outcome == AttemptOutcome.CEILING_REACHED
    assert len(model.requests[CLASSIFY]) == 1


def test_nothing_runs_and_nothing_is_recorded_while_drafting_is_inactive(model, waiting, settings):
    configure(settings, chat_provider="none")

    summary = draft_account(waiting.account)

    assert summary.skipped.startswith("drafting is inactive")
    assert not DraftAttempt.objects.exists() and not model.requests


def test_the_run_stops_when_an_endpoint_failure_makes_drafting_unavailable(model, waiting):
    second = EmailFactory(
        folder=waiting.answered.folder,
        subject="Do you deliver on Saturdays?",
        body="Hello, do you deliver on Saturdays? Regards, Tom",
        received_at=timezone.now() - timedelta(minutes=30),
        thread_id=uuid.uuid4(),
    )
    model.script(CLASSIFY, status(500))

    summary = draft_account(waiting.account)

    assert (summary.considered, summary.stopped_by) == (1, "provider")
    assert summary.refused == {AttemptOutcome.PROVIDER_FAILED: 1}
    assert not DraftAttempt.objects.filter(email=second).exists()

    again = draft_account(waiting.account)  # within the minute: drafting is degraded

    assert again.skipped.startswith("drafting is degraded") and again.considered == 0

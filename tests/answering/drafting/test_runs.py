"""Drafting runs: bounded, oldest first, refusals counted, the ledger stops them, one run per account.

Most tests here pass a STAND-IN FOR THE PIPELINE as draft_account(compose=...): a tiny local
function with compose_draft's signature, returning the pipeline's own ComposedDraft and
DraftRefused, so each way a run can go is one line to arrange. What they test is the run
around the composer. The tests at the end run the real compose_draft against the scripted
OpenAI-compatible server (tests/answering/drafting/conftest.py).
"""

from __future__ import annotations

import logging
import threading
import uuid
from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone

from accounts.models import FolderRole
from answering.drafting.pipeline import ComposedDraft, DraftRefused
from answering.drafting.runs import account_lock, draft_account
from answering.ledger import drafting_ledger
from answering.models import AttemptOutcome, Draft, DraftAttempt, DraftStatus, Intent, Verdict
from mailbox.models import Email
from mailfathom.core.errors import MailFathomError
from tests.factories import MailAccountFactory
from tests.mailbox.factories import EmailFactory, mapped_folder
from tests.privacy import remember

pytestmark = pytest.mark.django_db


# --- the stand-in for the pipeline --------------------------------------------------------


def StandInComposed(body: str, **fields) -> ComposedDraft:
    """A real pipeline.ComposedDraft, made up by the stand-in."""
    values = {
        "intent": Intent.INQUIRY.value,
        "language": "en",
        "source_ids": (),
        "verdict": Verdict.READY.value,
        "reasons": (),
        "note": "",
        "model_alias": "drafting",
        "tokens": {"generate": {"prompt": 100, "completion": 20}},
    }
    return ComposedDraft(body=body, **{**values, **fields})


def StandInRefused(stage: str, outcome: str, model_alias: str = "utility") -> DraftRefused:
    """A real pipeline.DraftRefused, made up by the stand-in."""
    return DraftRefused(
        stage=stage,
        outcome=outcome,
        model_alias=model_alias,
        tokens={"classify": {"prompt": 50, "completion": 3}},
    )


class StandInComposer:
    """Answers each email as told by its subject; records what it was handed, in order."""

    def __init__(self, refuse: dict[str, StandInRefused | Exception] | None = None) -> None:
        self.refuse = refuse or {}
        self.seen: list[str] = []

    def __call__(self, email: Email):
        self.seen.append(email.subject)
        outcome = self.refuse.get(email.subject)
        if isinstance(outcome, Exception):
            raise outcome
        if outcome is not None:
            return outcome
        body = f"Dear customer, about {email.subject}: confirmed."
        remember(body)
        return StandInComposed(body, source_ids=(email.id,))


# --- the mailbox -------------------------------------------------------------------------


@pytest.fixture
def account():
    return MailAccountFactory(drafting_enabled=True, drafting_max_per_run=3)


@pytest.fixture
def inbox(account):
    return mapped_folder(account, "inbox", role=FolderRole.INBOX)


def _waiting(inbox, count: int) -> list[Email]:
    """`count` unanswered emails, oldest first, named mail-0 (oldest) to mail-<count-1>."""
    now = timezone.now()
    return [
        EmailFactory(
            folder=inbox,
            subject=f"mail-{n}",
            received_at=now - timedelta(hours=count - n),
            thread_id=uuid.uuid4(),
        )
        for n in range(count)
    ]


def test_a_run_drafts_at_most_the_accounts_bound_oldest_first_as_pending(account, inbox):
    emails = _waiting(inbox, 5)
    compose = StandInComposer()

    summary = draft_account(account, compose=compose)

    assert compose.seen == ["mail-0", "mail-1", "mail-2"]
    assert (summary.considered, summary.drafted, summary.stopped_by) == (3, 3, "")
    draft = Draft.objects.get(email=emails[0])
    assert draft.status == DraftStatus.PENDING and draft.account == account
    assert draft.source_ids == [emails[0].id] and draft.model_alias == "drafting"
    assert draft.tokens == {"generate": {"prompt": 100, "completion": 20}}

    again = StandInComposer()
    draft_account(account, compose=again)

    assert again.seen == ["mail-3", "mail-4"]
    assert Draft.objects.count() == 5


def test_a_refusal_is_counted_the_run_moves_on_and_the_next_run_holds_it_back(account, inbox):
    emails = _waiting(inbox, 3)
    compose = StandInComposer(
        refuse={
            "mail-0": StandInRefused("classify", AttemptOutcome.CLASSIFY_REFUSED),
            "mail-1": StandInRefused("generate", AttemptOutcome.PROVIDER_FAILED, model_alias="drafting"),
        }
    )

    summary = draft_account(account, compose=compose)

    assert summary.drafted == 1
    assert summary.refused == {AttemptOutcome.CLASSIFY_REFUSED: 1, AttemptOutcome.PROVIDER_FAILED: 1}
    attempt = DraftAttempt.objects.get(email=emails[0])
    assert (attempt.stage, attempt.outcome, attempt.model_alias) == (
        "classify",
        "classify_refused",
        "utility",
    )
    assert attempt.tokens == {"classify": {"prompt": 50, "completion": 3}}
    assert not Draft.objects.filter(email__in=emails[:2]).exists()

    retry = StandInComposer()
    draft_account(account, compose=retry)

    # A refusal that would repeat waits (gate.RETRY_AFTER); a provider failure is tried again.
    assert retry.seen == ["mail-1"]


def test_the_run_stops_when_the_composer_reports_the_ceiling(account, inbox):
    _waiting(inbox, 3)
    compose = StandInComposer(refuse={"mail-1": StandInRefused("admission", AttemptOutcome.CEILING_REACHED)})

    summary = draft_account(account, compose=compose)

    assert compose.seen == ["mail-0", "mail-1"]
    assert (summary.drafted, summary.stopped_by) == (1, "ledger")
    assert DraftAttempt.objects.get().outcome == AttemptOutcome.CEILING_REACHED


def test_the_run_stops_when_the_real_drafting_ledger_refuses(account, inbox, settings, mailfathom_settings):
    settings.PROVIDER_HEALTH_NAMESPACE = f"test-drafting-{uuid.uuid4().hex}"
    mailfathom_settings(drafting_max_runs_per_period=2)
    _waiting(inbox, 3)
    inner = StandInComposer()

    def admitted(email):
        drafting_ledger().admit()  # what compose_draft does first; 57001 once the period is spent
        return inner(email)

    summary = draft_account(account, compose=admitted)

    assert inner.seen == ["mail-0", "mail-1"]
    assert (summary.drafted, summary.stopped_by) == (2, "ledger")
    assert summary.refused == {AttemptOutcome.CEILING_REACHED: 1}


def test_a_provider_error_raised_by_the_composer_is_an_attempt_and_the_run_goes_on(account, inbox):
    _waiting(inbox, 2)
    compose = StandInComposer(
        refuse={"mail-0": MailFathomError(55001, "Something below the composer failed.")}
    )

    summary = draft_account(account, compose=compose)

    assert summary.drafted == 1 and summary.refused == {AttemptOutcome.PROVIDER_FAILED: 1}


def test_an_unexpected_error_is_logged_by_type_only_and_the_run_goes_on(account, inbox, caplog):
    _waiting(inbox, 2)
    compose = StandInComposer(refuse={"mail-0": ValueError("mail-0 could not be read")})

    with caplog.at_level(logging.ERROR, logger="answering.drafting.runs"):
        summary = draft_account(account, compose=compose)

    assert (summary.failed, summary.drafted) == (1, 1)
    assert "ValueError" in caplog.text and "mail-0" not in caplog.text


def test_a_draft_written_meanwhile_by_another_writer_is_counted_not_duplicated(account, inbox):
    (email,) = _waiting(inbox, 1)

    def racing(email):
        Draft.objects.create(
            account=account,
            email=email,
            body="first",
            intent="inquiry",
            language="en",
            verdict="ready",
            model_alias="x",
        )
        return StandInComposed("second")

    summary = draft_account(account, compose=racing)

    assert (summary.drafted, summary.already_drafted) == (0, 1)
    assert list(Draft.objects.values_list("body", flat=True)) == ["first"]


# Foreign keys are checked at commit (Django's are deferrable): commit as a worker does.
@pytest.mark.django_db(transaction=True)
def test_an_email_expunged_while_it_was_composed_is_counted_as_vanished(account, inbox):
    _waiting(inbox, 2)

    def expunging(email):
        Email.objects.filter(pk=email.pk).delete()
        return (
            StandInComposed("reply")
            if email.subject == "mail-0"
            else StandInRefused("classify", "classify_refused")
        )

    summary = draft_account(account, compose=expunging)

    assert (summary.drafted, summary.vanished) == (0, 2)
    assert not Draft.objects.exists() and not DraftAttempt.objects.exists()


@pytest.mark.parametrize("change", [{"drafting_enabled": False}, {"served": False}])
def test_nothing_runs_for_an_account_with_drafting_off_or_not_served(account, inbox, change):
    _waiting(inbox, 1)
    for name, value in change.items():
        setattr(account, name, value)
    account.save()
    compose = StandInComposer()

    summary = draft_account(account, compose=compose)

    assert summary.skipped == "drafting is off for this account" and compose.seen == []


def test_logs_carry_counts_and_the_alias_never_the_draft(account, inbox, caplog):
    _waiting(inbox, 2)

    with caplog.at_level(logging.INFO, logger="answering.drafting.runs"):
        draft_account(account, compose=StandInComposer())

    line = caplog.records[-1].getMessage()
    assert "2 drafted" in line and "alias drafting" in line and account.account_id in line
    assert "Dear customer" not in caplog.text and "mail-" not in caplog.text


@pytest.mark.django_db(transaction=True)
def test_a_run_finds_the_account_locked_by_another_session(account, inbox):
    _waiting(inbox, 1)
    compose = StandInComposer()
    started, release = threading.Event(), threading.Event()
    holder = threading.Thread(target=_hold_lock, args=(account.pk, started, release))
    holder.start()
    started.wait()
    try:
        summary = draft_account(account, compose=compose)
    finally:
        release.set()
        holder.join()

    assert summary.skipped == "another run holds the account" and compose.seen == []


def _hold_lock(account_pk: int, started: threading.Event, release: threading.Event) -> None:
    try:
        with account_lock(account_pk) as held:
            assert held
            started.set()
            release.wait()
    finally:
        connection.close()


@pytest.mark.django_db(transaction=True)
def test_two_workers_at_once_make_one_draft_per_email_and_neither_crashes(account, inbox):
    emails = _waiting(inbox, 2)
    first_inside, second_done = threading.Event(), threading.Event()
    results: dict[str, object] = {}

    def slow(email):
        first_inside.set()
        second_done.wait(timeout=30)
        return StandInComposed("reply")

    def first_worker():
        try:
            results["first"] = draft_account(account, compose=slow)
        finally:
            connection.close()

    worker = threading.Thread(target=first_worker)
    worker.start()
    first_inside.wait(timeout=30)
    try:
        results["second"] = draft_account(account, compose=StandInComposer())
    finally:
        second_done.set()
        worker.join()

    assert results["second"].skipped == "another run holds the account"
    assert results["first"].drafted == 2
    assert Draft.objects.filter(email__in=emails).count() == 2

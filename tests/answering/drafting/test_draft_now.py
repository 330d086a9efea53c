"""Drafting an operator can start and see: each run recorded, the first run on switch-on,
"Draft now" in admin, and `manage.py draft` in a terminal.

Runs use the stand-in composer of test_runs (the run around the composer is under test);
what reaches the broker is read from delay(), our seam to it; Redis and PostgreSQL are real.
"""

from __future__ import annotations

import io
import uuid
from datetime import timedelta

import pytest
from django.contrib.admin.helpers import ACTION_CHECKBOX_NAME
from django.core.management import call_command
from django.core.management.base import CommandError
from django.urls import reverse
from django.utils import timezone

from accounts.models import FolderRole, MailAccount
from answering import tasks
from answering.drafting import runs
from answering.drafting.runs import draft_account
from answering.models import AttemptOutcome, Draft, DraftRun, RunTrigger
from mailfathom.core.progress import Progress
from tests.answering.drafting.test_runs import StandInComposer, StandInRefused
from tests.factories import MailAccountFactory, account_form_data
from tests.mailbox.factories import EmailFactory, mapped_folder

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("own_provider_health")]


@pytest.fixture
def queued(monkeypatch) -> list[tuple[tuple, dict]]:
    calls: list[tuple[tuple, dict]] = []
    monkeypatch.setattr(tasks.draft_account_task, "delay", lambda *a, **kw: calls.append((a, kw)))
    return calls


@pytest.fixture
def endpoint(mailfathom_settings):
    """A declared chat endpoint (nothing calls it here): drafting reads as available."""
    mailfathom_settings(
        chat_provider="openai", chat_base_url="http://127.0.0.1:9/v1", chat_model="m", chat_api_key="k"
    )


def _waiting(account, count: int) -> None:
    inbox = mapped_folder(account, "inbox", role=FolderRole.INBOX)
    now = timezone.now()
    for n in range(count):
        EmailFactory(
            folder=inbox,
            subject=f"mail-{n}",
            received_at=now - timedelta(hours=count - n),
            thread_id=uuid.uuid4(),
        )


# --- the record of a run ------------------------------------------------------------------


def test_a_run_is_recorded_with_its_trigger_times_and_counts_and_reports_progress():
    account = MailAccountFactory(drafting_enabled=True, drafting_max_per_run=5)
    _waiting(account, 3)
    events: list[Progress] = []
    compose = StandInComposer(refuse={"mail-1": StandInRefused("classify", AttemptOutcome.CLASSIFY_REFUSED)})

    summary = draft_account(account, compose=compose, trigger=RunTrigger.COMMAND, progress=events.append)

    run = DraftRun.objects.get(pk=summary.run_pk)
    assert (run.account_id, run.trigger) == (account.pk, RunTrigger.COMMAND)
    assert run.started_at <= run.ended_at
    assert (run.considered, run.drafted, run.refused, run.stopped_by, run.skipped) == (
        3,
        2,
        {"classify_refused": 1},
        "",
        "",
    )
    assert [(e.done, e.total) for e in events] == [(0, 3), (1, 3), (2, 3), (3, 3)]


def test_a_skipped_run_is_recorded_with_why():
    account = MailAccountFactory(drafting_enabled=False)

    summary = draft_account(account, compose=StandInComposer())

    run = DraftRun.objects.get(pk=summary.run_pk)
    assert run.skipped == "drafting is off for this account" and run.ended_at is not None


def test_an_interrupted_run_keeps_what_it_did_until_then():
    account = MailAccountFactory(drafting_enabled=True)
    _waiting(account, 3)

    def interrupt(event: Progress) -> None:
        if event.done == 1:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        draft_account(account, compose=StandInComposer(), progress=interrupt)

    run = DraftRun.objects.get()
    assert (run.considered, run.drafted) == (1, 1) and run.ended_at is not None


# --- the first run when drafting is switched on ---------------------------------------------


def test_switching_drafting_on_queues_one_run_after_commit_and_only_then(
    queued, django_capture_on_commit_callbacks
):
    account = MailAccountFactory(drafting_enabled=False)
    born_on = MailAccountFactory(drafting_enabled=True)  # a new account: nothing to draft yet

    with django_capture_on_commit_callbacks(execute=True):
        account.drafting_enabled = True
        account.save()
        assert queued == []  # not before the commit
        account.display_name = "Renamed"
        account.save()  # on and on: no second run
        born_on.save()
        MailAccount.objects.get(pk=account.pk).save(update_fields=["display_name"])

    assert queued == [((account.pk,), {"trigger": RunTrigger.SWITCHED_ON})]


def test_switching_drafting_on_in_admin_queues_the_first_run(
    admin_client, queued, django_capture_on_commit_callbacks
):
    account = MailAccountFactory(drafting_enabled=False)
    data = account_form_data(
        account_id=account.account_id,
        display_name=account.display_name,
        drafting_enabled="on",
        **{"folders-TOTAL_FORMS": "0"},
    )

    with django_capture_on_commit_callbacks(execute=True):
        response = admin_client.post(reverse("admin:accounts_mailaccount_change", args=[account.pk]), data)

    assert response.status_code == 302, response.content.decode()[:2000]
    assert queued == [((account.pk,), {"trigger": RunTrigger.SWITCHED_ON})]


def test_switching_drafting_on_for_an_account_not_served_queues_nothing(
    queued, django_capture_on_commit_callbacks
):
    account = MailAccountFactory(drafting_enabled=False, served=False)

    with django_capture_on_commit_callbacks(execute=True):
        account.drafting_enabled = True
        account.save()

    assert queued == []


# --- Draft now in admin ----------------------------------------------------------------------


def test_draft_now_queues_runs_for_accounts_that_draft_and_says_why_not_for_the_others(
    admin_client, queued, endpoint, django_capture_on_commit_callbacks
):
    on = MailAccountFactory(drafting_enabled=True, display_name="Oak")
    off = MailAccountFactory(drafting_enabled=False, display_name="Elm")

    with django_capture_on_commit_callbacks(execute=True):
        response = admin_client.post(
            reverse("admin:accounts_mailaccount_changelist"),
            {"action": "draft_now", ACTION_CHECKBOX_NAME: [on.pk, off.pk]},
            follow=True,
        )

    page = response.content.decode()
    assert queued == [((on.pk,), {"trigger": RunTrigger.DRAFT_NOW})]
    assert "Queued 1 drafting run (Oak)" in page
    assert "Reply drafting is off for Elm" in page


def test_draft_now_while_the_deployment_declares_no_drafting_endpoint_queues_nothing(
    admin_client, queued, mailfathom_settings
):
    mailfathom_settings(chat_provider="none")
    on = MailAccountFactory(drafting_enabled=True)

    response = admin_client.post(
        reverse("admin:accounts_mailaccount_changelist"),
        {"action": "draft_now", ACTION_CHECKBOX_NAME: [on.pk]},
        follow=True,
    )

    assert queued == [] and "does not draft replies" in response.content.decode()


# --- manage.py draft ------------------------------------------------------------------------


def _draft(*args: str) -> tuple[str, str]:
    out, err = io.StringIO(), io.StringIO()
    call_command("draft", *args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


@pytest.fixture
def stand_in(monkeypatch) -> StandInComposer:
    """The command's run with the stand-in composer (the pipeline is tested on its own)."""
    composer = StandInComposer()
    real = runs.draft_account
    monkeypatch.setattr(
        "answering.management.commands.draft.draft_account",
        lambda account, **kw: real(account, compose=composer, **kw),
    )
    return composer


def test_the_command_drafts_inline_with_a_bar_and_prints_the_summary(endpoint, stand_in):
    account = MailAccountFactory(account_id="oak", drafting_enabled=True)
    _waiting(account, 2)

    out, err = _draft("oak")

    assert out.strip() == "oak: 2 considered; 2 drafted."
    assert "drafting oak" in err and "2/2" in err
    assert Draft.objects.count() == 2
    assert DraftRun.objects.get().trigger == RunTrigger.COMMAND


@pytest.mark.parametrize(
    ("setup", "sentence"),
    [
        ("unknown", "No account has that identifier."),
        ("off", "Reply drafting is off for"),
        ("redis", "Redis cannot be reached"),
    ],
)
def test_the_command_refuses_in_one_sentence(endpoint, settings, tmp_path, setup, sentence):
    MailAccountFactory(account_id="oak", drafting_enabled=setup != "off")
    if setup == "redis":
        settings.REDIS_URL = f"redis+socket://{tmp_path / 'no-redis.sock'}"

    with pytest.raises(CommandError) as refused:
        _draft("nope" if setup == "unknown" else "oak")

    assert sentence in str(refused.value)
    assert not DraftRun.objects.exists()


def test_ctrl_c_exits_130_keeping_the_drafts_stored(endpoint, monkeypatch):
    account = MailAccountFactory(account_id="oak", drafting_enabled=True)
    _waiting(account, 3)
    inner = StandInComposer()

    def composer(email):
        if email.subject == "mail-1":
            raise KeyboardInterrupt
        return inner(email)

    real = runs.draft_account
    monkeypatch.setattr(
        "answering.management.commands.draft.draft_account",
        lambda account, **kw: real(account, compose=composer, **kw),
    )

    with pytest.raises(CommandError) as stopped:
        _draft("oak", "--no-progress")

    assert stopped.value.returncode == 130
    assert Draft.objects.count() == 1

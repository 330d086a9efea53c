"""Retention: whole entries past each account's window, at most 5,000 per trail per pass, oldest first."""

from __future__ import annotations

import uuid
from datetime import timedelta

import pytest
from django.conf import settings as django_settings
from django.forms.models import model_to_dict
from django.utils import timezone

from audit import tasks
from audit.models import AnsweringRunEntry, MutationEntry, RunOutcome
from audit.services import retention
from audit.services.retention import BATCH, erase_expired_entries
from mailbox.models import Folder
from tests.audit.test_mutations import mutation
from tests.factories import MailAccountFactory
from tests.mailbox.factories import mapped_folder

pytestmark = pytest.mark.django_db


def _answering(account, count: int, age: timedelta, start: int = 0) -> None:
    now = timezone.now()
    AnsweringRunEntry.objects.bulk_create(
        [
            AnsweringRunEntry(
                run_id=uuid.uuid4(),
                account=account,
                chat_alias="scripted",
                instruction_version="v",
                # Distinct ages, so "oldest first" is observable.
                started_at=now - age - timedelta(seconds=start + n),
                ended_at=now - age - timedelta(seconds=start + n),
                outcome=RunOutcome.ANSWERED,
            )
            for n in range(count)
        ],
        batch_size=2000,
    )


def test_12000_expired_entries_are_erased_over_three_passes_oldest_first_and_recent_ones_stay():
    account = MailAccountFactory(answering_audit_enabled=True, answering_audit_retention_days=30)
    _answering(account, 12_000, timedelta(days=31))
    _answering(account, 7, timedelta(days=29))
    oldest_first = list(AnsweringRunEntry.objects.order_by("ended_at").values_list("pk", flat=True))

    erased = [erase_expired_entries().answering_erased for _ in range(4)]

    assert BATCH == 5000
    assert erased == [5000, 5000, 2000, 0]
    assert AnsweringRunEntry.objects.count() == 7
    assert set(AnsweringRunEntry.objects.values_list("pk", flat=True)) == set(oldest_first[-7:])


def test_one_pass_takes_the_oldest_entries_first():
    account = MailAccountFactory(answering_audit_retention_days=1)
    _answering(account, 3, timedelta(days=2))
    oldest = AnsweringRunEntry.objects.order_by("ended_at").first()

    assert erase_expired_entries(batch=1).answering_erased == 1

    assert not AnsweringRunEntry.objects.filter(pk=oldest.pk).exists()
    assert AnsweringRunEntry.objects.count() == 2


def test_retention_goes_on_for_an_account_whose_trails_were_switched_off():
    account = MailAccountFactory(
        answering_audit_enabled=False, answering_audit_retention_days=5, mutation_audit_retention_days=5
    )
    _answering(account, 2, timedelta(days=6))
    MutationEntry.objects.bulk_create(
        [mutation(account, requested_at=timezone.now() - timedelta(days=d)) for d in (6, 4)]
    )

    result = erase_expired_entries()

    assert (result.answering_erased, result.mutations_erased) == (2, 1)
    assert list(MutationEntry.objects.values_list("requested_at__date", flat=True)) == [
        (timezone.now() - timedelta(days=4)).date()
    ]


def test_mutation_entries_of_a_deleted_account_leave_by_the_window_they_were_written_under():
    account = MailAccountFactory(mutation_audit_retention_days=10)
    MutationEntry.objects.bulk_create(
        [
            mutation(account, requested_at=timezone.now() - timedelta(days=d), retention_days=10)
            for d in (11, 9)
        ]
    )
    account.delete()
    assert MutationEntry.objects.filter(account__isnull=True).count() == 2

    assert erase_expired_entries().mutations_erased == 1

    (kept,) = MutationEntry.objects.all()
    assert kept.requested_at < timezone.now() - timedelta(days=8)


def test_a_retention_failure_leaves_sync_state_untouched_and_the_next_account_is_still_served(monkeypatch):
    broken = MailAccountFactory(account_id="broken", answering_audit_retention_days=1)
    fine = MailAccountFactory(account_id="fine", answering_audit_retention_days=1)
    folder = mapped_folder(
        broken,
        "inbox",
        last_committed_at=timezone.now() - timedelta(hours=3),
        last_failure_code=61001,
        last_failure_at=timezone.now() - timedelta(hours=1),
        consecutive_failures=2,
        backoff_until=timezone.now() + timedelta(minutes=10),
    )
    _answering(broken, 2, timedelta(days=2))
    _answering(fine, 2, timedelta(days=2))
    state_before = model_to_dict(Folder.objects.get(pk=folder.pk))
    real = retention.erase_account_entries

    def failing(account, now, batch=BATCH, **holds):
        if account.account_id == "broken":
            raise RuntimeError("retention failed")
        return real(account, now, batch, **holds)

    monkeypatch.setattr(retention, "erase_account_entries", failing)

    summary = tasks.erase_expired_audit_entries()  # the task, called as the worker would

    assert summary == {"answering_erased": 2, "mutations_erased": 0, "failed_accounts": 1, "held": 0}
    assert model_to_dict(Folder.objects.get(pk=folder.pk)) == state_before
    assert AnsweringRunEntry.objects.filter(account=broken).count() == 2  # the next pass erases them
    assert not AnsweringRunEntry.objects.filter(account=fine).exists()


def test_retention_has_a_beat_schedule_of_its_own():
    entry = django_settings.CELERY_BEAT_SCHEDULE["erase-expired-audit-entries"]
    assert entry["task"] == tasks.erase_expired_audit_entries.name == "audit.erase_expired_entries"

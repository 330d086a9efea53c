"""The mutation trail: written only through record_mutation, only for accounts that keep it."""

from __future__ import annotations

from datetime import datetime

import pytest
from django.core.exceptions import ValidationError
from django.utils import timezone

from accounts.models import MailAccount
from audit.models import MutationEntry, MutationKind, MutationOutcome, RequesterKind
from audit.services.mutations import Mutation, message_id_hash, record_mutation
from tests.factories import MailAccountFactory

pytestmark = pytest.mark.django_db


def mutation(account: MailAccount, *, requested_at: datetime, retention_days: int = 90) -> MutationEntry:
    """An unsaved entry, for bulk creation in retention tests."""
    return MutationEntry(
        kind=MutationKind.ERASURE_EXECUTED,
        requester="compliance",
        requester_kind=RequesterKind.USER,
        account=account,
        account_identifier=account.account_id,
        requested_at=requested_at,
        outcome=MutationOutcome.PERFORMED,
        retention_days=retention_days,
    )


def _act(account: MailAccount, **changes) -> Mutation:
    values = {
        "kind": MutationKind.ERASURE_EXECUTED,
        "requester": "erasure-token",
        "requester_kind": RequesterKind.API_TOKEN,
        "account_pk": account.pk,
        "requested_at": timezone.now(),
        "completed_at": timezone.now(),
        "outcome": MutationOutcome.PERFORMED,
        "message_id_hash": message_id_hash("<a1@example.org>"),
        "folder_alias": "inbox",
        "uid": 42,
        "counts": {"emails": 1, "bytes": 2048},
    }
    values.update(changes)
    return Mutation(**values)


def test_an_act_on_an_account_keeping_the_trail_is_recorded_with_plain_values_only():
    account = MailAccountFactory(
        account_id="billing", mutation_audit_enabled=True, mutation_audit_retention_days=120
    )

    entry = record_mutation(_act(account))

    assert entry is not None and MutationEntry.objects.get() == entry
    assert (entry.account, entry.account_identifier, entry.retention_days) == (account, "billing", 120)
    assert entry.message_id_hash == message_id_hash(" <a1@example.org> ") and len(entry.message_id_hash) == 64
    assert (entry.folder_alias, entry.uid, entry.counts) == ("inbox", 42, {"emails": 1, "bytes": 2048})
    assert (entry.requester, entry.requester_kind, entry.outcome) == (
        "erasure-token",
        "api_token",
        "performed",
    )


def test_an_act_on_an_account_with_the_trail_off_is_not_recorded():
    account = MailAccountFactory()  # off by default

    assert record_mutation(_act(account)) is None
    assert not MutationEntry.objects.exists()


def test_an_entry_outlives_its_account_naming_it_by_identifier():
    account = MailAccountFactory(account_id="gone", mutation_audit_enabled=True)
    record_mutation(_act(account, kind=MutationKind.ACCOUNT_MAIL_DELETED, requester_kind=RequesterKind.USER))

    account.delete()

    (entry,) = MutationEntry.objects.all()
    assert (entry.account, entry.account_identifier) == (None, "gone")


def test_an_abandoned_act_keeps_its_failure_code():
    account = MailAccountFactory(mutation_audit_enabled=True)

    entry = record_mutation(
        _act(account, outcome=MutationOutcome.ABANDONED, failure_code=61001, completed_at=None, counts={})
    )

    assert (entry.outcome, entry.failure_code, entry.completed_at) == ("abandoned", 61001, None)


@pytest.mark.parametrize(
    "changes",
    [
        {"counts": {"subject": "Invoice 7"}},
        {"counts": {"Subject line": 1}},
        {"counts": {"emails": -1}},
        {"counts": {"emails": True}},
        {"failure_code": 7},
        {"message_id_hash": "<a1@example.org>"},
    ],
)
def test_content_in_place_of_a_count_a_code_or_a_hash_is_refused(changes):
    account = MailAccountFactory(mutation_audit_enabled=True)

    with pytest.raises(ValueError):
        record_mutation(_act(account, **changes))
    assert not MutationEntry.objects.exists()


def test_the_mutation_trail_is_off_by_default_with_a_90_day_window_of_1_to_3650_days():
    assert MailAccount._meta.get_field("mutation_audit_enabled").default is False
    assert MailAccount._meta.get_field("mutation_audit_retention_days").default == 90
    MailAccountFactory.build(mutation_audit_retention_days=3650).full_clean()
    for days in (0, 3651):
        with pytest.raises(ValidationError):
            MailAccountFactory.build(mutation_audit_retention_days=days).full_clean()

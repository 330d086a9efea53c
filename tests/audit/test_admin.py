"""The operator's read-only view of both trails: listed, filtered, linked, never edited."""

from __future__ import annotations

import uuid

import pytest
from django.urls import reverse
from django.utils import timezone

from audit.models import AnsweringRunEmail, AnsweringRunEntry, MutationEntry, RunOutcome
from tests.audit.test_mutations import mutation
from tests.factories import MailAccountFactory
from tests.mailbox.factories import EmailFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def entry() -> AnsweringRunEntry:
    account = MailAccountFactory(account_id="work")
    run = AnsweringRunEntry.objects.create(
        run_id=uuid.uuid4(),
        account=account,
        chat_alias="scripted",
        instruction_version="v1",
        started_at=timezone.now(),
        ended_at=timezone.now(),
        outcome=RunOutcome.PROVIDER_FAILED,
    )
    email = EmailFactory(account=account, subject="Never shown in the trail", body="nor this")
    AnsweringRunEmail.objects.create(entry=run, email=email, position=0, cited=False)
    return run


def test_the_answering_trail_lists_filters_and_links_each_retrieved_email(admin_client, entry):
    listing = admin_client.get(
        reverse("admin:audit_answeringrunentry_changelist"),
        {"account__id__exact": entry.account_id, "outcome": "provider_failed"},
    )
    assert listing.status_code == 200 and str(entry.run_id) in listing.content.decode()
    assert (
        str(entry.run_id)
        not in admin_client.get(
            reverse("admin:audit_answeringrunentry_changelist"), {"outcome": "answered"}
        ).content.decode()
    )

    page = admin_client.get(reverse("admin:audit_answeringrunentry_change", args=[entry.pk])).content.decode()
    email_id = entry.emails.get().email_id
    assert reverse("admin:mailbox_email_change", args=[email_id]) in page
    assert "Never shown in the trail" not in page


def test_the_mutation_trail_lists_and_filters_by_kind(admin_client):
    account = MailAccountFactory(account_id="billing")
    mutation(account, requested_at=timezone.now()).save()

    url = reverse("admin:audit_mutationentry_changelist")
    assert "billing" in admin_client.get(url, {"kind": "erasure_executed"}).content.decode()
    assert (
        admin_client.get(url, {"kind": "draft_appended", "account__id__exact": account.pk})
        .context["cl"]
        .result_count
        == 0
    )


def test_neither_trail_can_be_added_changed_or_deleted_in_admin(admin_client, entry):
    row = mutation(entry.account, requested_at=timezone.now())
    row.save()
    for model, pk in (("answeringrunentry", entry.pk), ("mutationentry", row.pk)):
        assert admin_client.get(reverse(f"admin:audit_{model}_add")).status_code == 403
        assert admin_client.post(reverse(f"admin:audit_{model}_delete", args=[pk])).status_code == 403
        changed = admin_client.post(
            reverse(f"admin:audit_{model}_change", args=[pk]), {"outcome": "answered"}
        )
        assert changed.status_code == 403
    assert AnsweringRunEntry.objects.get().outcome == "provider_failed"
    assert MutationEntry.objects.count() == 1


def test_the_account_form_shows_the_mutation_trail_switch_and_window(admin_client):
    account = MailAccountFactory()
    page = admin_client.get(reverse("admin:accounts_mailaccount_change", args=[account.pk])).content.decode()
    assert 'name="mutation_audit_enabled"' in page and 'name="mutation_audit_retention_days"' in page

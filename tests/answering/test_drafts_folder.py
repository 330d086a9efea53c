"""Stage 9 against a real Dovecot: a reviewed draft in the Drafts folder, once, replaced on edit."""

from __future__ import annotations

import threading
import uuid

import pytest
from django.contrib.auth.models import Permission
from django.db import connection, transaction
from django.urls import reverse
from django.utils import timezone

from answering.drafting import deliver
from answering.drafting.deliver import deliver_draft
from answering.drafting.review import approve_draft, discard_draft, edit_and_approve_draft
from answering.models import Draft, DraftStatus
from audit.models import MutationEntry, MutationKind, MutationOutcome, RequesterKind
from audit.services.mutations import message_id_hash
from mailbox.models import Direction, Email
from mailbox.sync.engine import synchronize_account
from mailfathom.core.errors import MailFathomError
from tests.answering.drafts_support import DraftFactory, answered_email, drafting_account, drafts_on_server
from tests.answering.imap_cut import AppendCuttingProxy
from tests.mailbox.imap_support import add_user
from tests.support import free_port

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.dovecot]


@pytest.fixture
def user(dovecot):
    return add_user(dovecot)


@pytest.fixture
def reviewer(django_user_model):
    return django_user_model.objects.create_user("reviewer", password="pw-reviewer-1", is_staff=True)


def _proxy(user, request, **options) -> AppendCuttingProxy:
    proxy = AppendCuttingProxy(user.server.host, user.server.imap_port, **options)
    request.addfinalizer(proxy.close)
    return proxy


def _text(message) -> str:
    return message.get_content().replace("\r\n", "\n")


def _trail(account) -> list[tuple[str, str, int | None, dict]]:
    rows = MutationEntry.objects.filter(account=account).order_by("id")  # in the order written
    return [(e.kind, e.outcome, e.uid, e.counts) for e in rows]


def test_an_approved_draft_lands_in_drafts_with_the_draft_flag_and_threading_headers(user, reviewer):
    account = drafting_account(user, append_mode="approved")
    answered = answered_email(account, reply_to=[("Orders desk", "orders@customer.example")])
    draft = DraftFactory(email=answered, body="Grüße aus Köln,\n\nyour order 4711 ships on Friday.\n")

    result = approve_draft(draft.pk, reviewer)

    assert result.delivery_error is None and result.delivery.appended
    copies = drafts_on_server(user)
    assert list(copies) == [result.draft.remote_uid]
    flags, message = copies[result.draft.remote_uid]
    assert "\\Draft" in flags and "\\Seen" in flags
    assert message["Message-ID"] == f"<{result.draft.remote_message_id}>"
    assert result.draft.remote_message_id.startswith(f"{draft.id}.")
    assert message["In-Reply-To"] == "<order-4711@customer.example>"
    assert message["References"].split() == [
        "<enquiry-1@customer.example>",
        "<offer-2@shop.example>",
        "<order-4711@customer.example>",
    ]
    assert message["From"].addresses[0].addr_spec == f"{user.name}@example.org"
    assert [a.addr_spec for a in message["To"].addresses] == ["orders@customer.example"]  # Reply-To wins
    assert message["Subject"] == "Re: Order 4711"
    assert message.get_content_type() == "text/plain"
    assert message.get_content_charset() == "utf-8"
    assert _text(message) == "Grüße aus Köln,\n\nyour order 4711 ships on Friday.\n"
    stored = Draft.objects.get(pk=draft.pk)
    assert stored.status == DraftStatus.APPROVED and stored.reviewed_by == reviewer
    assert stored.appended_at is not None and stored.remote_folder.mapping.alias == "drafts"
    assert stored.remote_uidvalidity == user.uidvalidity("Drafts")
    (entry,) = MutationEntry.objects.filter(account=account)
    assert (entry.kind, entry.outcome, entry.uid, entry.folder_alias) == (
        MutationKind.DRAFT_APPENDED,
        MutationOutcome.PERFORMED,
        stored.remote_uid,
        "drafts",
    )
    assert (entry.requester, entry.requester_kind) == ("reviewer", RequesterKind.USER)
    assert entry.message_id_hash == message_id_hash(stored.remote_message_id)
    assert entry.counts["found_existing"] == 0 and entry.counts["bytes"] > 0


def test_a_cut_after_the_server_stored_the_append_and_a_retry_leave_exactly_one_copy(user, reviewer, request):
    proxy = _proxy(user, request, cut_append_at="answer")
    account = drafting_account(user, append_mode="approved", port=proxy.port)
    draft = DraftFactory(email=answered_email(account))

    first = approve_draft(draft.pk, reviewer)

    assert first.delivery_error is not None and first.delivery_error.code == 63004
    assert first.draft.status == DraftStatus.APPROVED  # the approval is kept
    assert proxy.cuts == 1
    assert len(drafts_on_server(user)) == 1  # the server did store it
    minted = first.draft.remote_message_id
    assert minted and first.draft.appended_at is None

    retry = deliver_draft(first.draft)

    copies = drafts_on_server(user)
    assert len(copies) == 1 and retry.found_existing and not retry.appended
    ((uid, (_, message)),) = copies.items()
    assert message["Message-ID"] == f"<{minted}>" and retry.uid == uid
    stored = Draft.objects.get(pk=draft.pk)
    assert (stored.remote_uid, stored.remote_message_id) == (uid, minted) and stored.appended_at
    assert [(kind, outcome, uid) for kind, outcome, uid, _ in _trail(account)] == [
        (MutationKind.DRAFT_APPENDED, MutationOutcome.ABANDONED, None),
        (MutationKind.DRAFT_APPENDED, MutationOutcome.PERFORMED, uid),
    ]
    abandoned, performed = MutationEntry.objects.filter(account=account).order_by("id")
    assert abandoned.failure_code == 63004 and abandoned.message_id_hash == message_id_hash(minted)
    assert performed.counts["found_existing"] == 1 and performed.message_id_hash == message_id_hash(minted)

    again = deliver_draft(stored)  # delivered: nothing to do, nothing connects
    assert again.skipped and proxy.sessions == 2 and len(drafts_on_server(user)) == 1


def test_a_cut_before_the_message_was_sent_and_a_retry_leave_exactly_one_copy(user, reviewer, request):
    proxy = _proxy(user, request, cut_append_at="continuation")
    account = drafting_account(user, append_mode="approved", port=proxy.port)
    draft = DraftFactory(email=answered_email(account))

    first = approve_draft(draft.pk, reviewer)
    assert first.delivery_error.code == 63004 and drafts_on_server(user) == {}

    retry = deliver_draft(first.draft)

    assert retry.appended and not retry.found_existing
    assert list(drafts_on_server(user)) == [retry.uid]


def test_an_edit_replaces_the_copy_old_uid_gone_new_present_each_change_on_the_trail(user, reviewer):
    account = drafting_account(user, append_mode="approved")
    draft = DraftFactory(email=answered_email(account))
    first = approve_draft(draft.pk, reviewer)
    old_uid, old_id = first.draft.remote_uid, first.draft.remote_message_id

    edited = edit_and_approve_draft(draft.pk, reviewer, "Dear Ms Example,\n\nit ships on Monday instead.\n")

    assert edited.delivery_error is None and edited.delivery.removed == 1 and edited.delivery.expunged
    copies = drafts_on_server(user)
    new_uid = edited.draft.remote_uid
    assert list(copies) == [new_uid] and new_uid != old_uid
    assert _text(copies[new_uid][1]) == "Dear Ms Example,\n\nit ships on Monday instead.\n"
    assert edited.draft.remote_message_id != old_id and edited.draft.status == DraftStatus.EDITED
    assert [(kind, outcome, uid) for kind, outcome, uid, _ in _trail(account)] == [
        (MutationKind.DRAFT_APPENDED, MutationOutcome.PERFORMED, old_uid),
        (MutationKind.DRAFT_APPENDED, MutationOutcome.PERFORMED, new_uid),
        (MutationKind.DRAFT_REPLACED, MutationOutcome.PERFORMED, old_uid),
    ]
    replaced = MutationEntry.objects.get(kind=MutationKind.DRAFT_REPLACED)
    assert replaced.message_id_hash == message_id_hash(old_id)

    # An edited draft may be edited again: replaced once more.
    again = edit_and_approve_draft(draft.pk, reviewer, "Dear Ms Example,\n\nTuesday, final answer.\n")
    assert list(drafts_on_server(user)) == [again.draft.remote_uid] and again.delivery.removed == 1


def test_without_uidplus_the_uid_comes_from_a_search_and_the_old_copy_is_only_flagged_deleted(
    user, reviewer, request
):
    proxy = _proxy(user, request, hide_capabilities=(b"UIDPLUS",))
    account = drafting_account(user, append_mode="approved", port=proxy.port)
    draft = DraftFactory(email=answered_email(account))
    first = approve_draft(draft.pk, reviewer)
    assert first.delivery_error is None and first.draft.remote_uid in drafts_on_server(user)

    edited = edit_and_approve_draft(draft.pk, reviewer, "A shorter reply.\n")

    copies = drafts_on_server(user)
    assert edited.delivery.removed == 1 and not edited.delivery.expunged
    assert set(copies) == {first.draft.remote_uid, edited.draft.remote_uid}
    assert "\\Deleted" in copies[first.draft.remote_uid][0]
    assert "\\Deleted" not in copies[edited.draft.remote_uid][0]
    replaced = MutationEntry.objects.get(kind=MutationKind.DRAFT_REPLACED)
    assert replaced.counts["expunged"] == 0


def test_append_mode_off_writes_nothing_and_records_nothing(user, reviewer, request):
    proxy = _proxy(user, request)
    account = drafting_account(user, append_mode="off", port=proxy.port)
    draft = DraftFactory(email=answered_email(account))

    result = approve_draft(draft.pk, reviewer)
    edit_and_approve_draft(draft.pk, reviewer, "Another reply.\n")

    assert result.delivery.skipped and result.delivery_error is None
    assert proxy.sessions == 0  # nothing even connected
    assert drafts_on_server(user) == {} and not MutationEntry.objects.exists()
    stored = Draft.objects.get(pk=draft.pk)
    assert stored.status == DraftStatus.EDITED
    assert stored.remote_message_id == "" and stored.remote_uid is None


def test_approved_mode_leaves_a_pending_draft_alone(user, request):
    proxy = _proxy(user, request)
    account = drafting_account(user, append_mode="approved", port=proxy.port)
    draft = DraftFactory(email=answered_email(account))

    assert deliver_draft(draft).skipped and proxy.sessions == 0


def test_every_mode_delivers_a_new_draft_and_a_discard_removes_it(user, reviewer):
    account = drafting_account(user, append_mode="every")
    draft = DraftFactory(email=answered_email(account))

    created = deliver_draft(draft)  # what the drafting run calls after storing a draft
    assert created.appended and list(drafts_on_server(user)) == [created.uid]

    discarded = discard_draft(draft.pk, reviewer)

    assert discarded.delivery.removed == 1 and drafts_on_server(user) == {}
    assert discarded.draft.status == DraftStatus.DISCARDED
    assert [(kind, uid) for kind, _, uid, _ in _trail(account)] == [
        (MutationKind.DRAFT_APPENDED, created.uid),
        (MutationKind.DRAFT_REMOVED, created.uid),
    ]
    requesters = list(MutationEntry.objects.order_by("id").values_list("requester_kind", flat=True))
    assert requesters == [RequesterKind.TASK, RequesterKind.USER]


def test_every_mode_approving_an_unchanged_delivered_draft_writes_nothing_more(user, reviewer):
    account = drafting_account(user, append_mode="every")
    draft = DraftFactory(email=answered_email(account))
    created = deliver_draft(draft)

    approved = approve_draft(draft.pk, reviewer)

    assert approved.delivery.skipped and list(drafts_on_server(user)) == [created.uid]
    assert MutationEntry.objects.filter(account=account).count() == 1


def test_no_drafts_role_folder_is_a_clear_error_with_a_code_and_the_approval_stays(user, reviewer, request):
    proxy = _proxy(user, request)
    account = drafting_account(user, append_mode="approved", drafts=False, port=proxy.port)
    draft = DraftFactory(email=answered_email(account))

    result = approve_draft(draft.pk, reviewer)

    assert result.delivery_error.code == 63001 and "Drafts role" in result.delivery_error.message
    assert result.draft.status == DraftStatus.APPROVED and result.draft.remote_message_id == ""
    assert proxy.sessions == 0 and not MutationEntry.objects.exists()


def test_a_drafts_folder_missing_on_the_server_is_63002_and_recorded_as_abandoned(user, reviewer):
    account = drafting_account(user, append_mode="approved", drafts=False)
    account.folders.create(alias="drafts", remote_name="No Such Folder", role="drafts")
    draft = DraftFactory(email=answered_email(account))

    result = approve_draft(draft.pk, reviewer)

    assert result.delivery_error.code == 63002
    (entry,) = MutationEntry.objects.filter(account=account)
    assert (entry.outcome, entry.failure_code, entry.completed_at) == (MutationOutcome.ABANDONED, 63002, None)


def test_a_delivery_already_running_for_the_draft_refuses_a_second_with_63005(user):
    account = drafting_account(user, append_mode="every")
    draft = DraftFactory(email=answered_email(account))
    holding, release = threading.Event(), threading.Event()

    def hold_the_lock() -> None:
        with deliver._one_delivery_at_a_time(draft):
            holding.set()
            release.wait(30)
        connection.close()

    other = threading.Thread(target=hold_the_lock)
    other.start()
    try:
        assert holding.wait(30)
        with pytest.raises(MailFathomError) as refused:
            deliver_draft(draft)
        assert refused.value.code == 63005
    finally:
        release.set()
        other.join(30)
    assert drafts_on_server(user) == {}
    assert deliver_draft(draft).appended  # once the other run is done, it goes through


def test_a_delivery_inside_a_transaction_is_refused_before_anything_is_written(user):
    account = drafting_account(user, append_mode="every")
    draft = DraftFactory(email=answered_email(account))

    with transaction.atomic(), pytest.raises(RuntimeError):
        deliver_draft(draft)

    assert drafts_on_server(user) == {} and Draft.objects.get(pk=draft.pk).remote_message_id == ""


def test_with_the_trail_off_a_delivery_still_happens_and_nothing_is_recorded(user, reviewer):
    account = drafting_account(user, append_mode="approved", mutation_audit_enabled=False)
    draft = DraftFactory(email=answered_email(account))

    result = approve_draft(draft.pk, reviewer)

    assert result.delivery.appended and len(drafts_on_server(user)) == 1
    assert not MutationEntry.objects.exists()


def test_a_synchronized_copy_of_a_delivered_draft_is_outgoing_mail_never_a_mail_to_answer(user, reviewer):
    account = drafting_account(user, append_mode="approved")
    account.username = user.name  # no address: From falls back to where the answered mail was sent
    account.save()
    draft = DraftFactory(email=answered_email(account, to=[("Shop", "shop@shop.example")]))
    delivered = approve_draft(draft.pk, reviewer)
    assert delivered.delivery.appended

    synchronize_account(account.pk)

    copy = Email.objects.get(account=account, folder__mapping__alias="drafts")
    assert copy.message_id == delivered.draft.remote_message_id and copy.sender_address == "shop@shop.example"
    assert copy.direction == Direction.OUTGOING


def test_in_admin_a_failed_delivery_keeps_the_approval_and_deliver_again_puts_it_in_place(
    user, reviewer, client
):
    # Nothing listens on this port: the server is unreachable for the approval.
    account = drafting_account(user, append_mode="approved", port=free_port(user.server.host))
    draft = DraftFactory(email=answered_email(account))
    page = reverse("admin:answering_draft_change", args=[draft.pk])
    # An operator (see_every_account): every account's drafts are theirs to approve.
    reviewer.user_permissions.add(
        *Permission.objects.filter(
            codename__in=["view_draft", "change_draft", "view_mail_content", "see_every_account"]
        )
    )
    client.force_login(reviewer)

    approved = client.post(page, {"_approve": "1", "body": draft.body}, follow=True).content.decode()

    assert "The draft is approved." in approved and "63004" in approved
    assert 'name="_deliver_again"' in approved
    assert Draft.objects.get(pk=draft.pk).status == DraftStatus.APPROVED and drafts_on_server(user) == {}

    account.imap_port = user.server.imap_port  # the server is back
    account.save()
    again = client.post(page, {"_deliver_again": "1"}, follow=True).content.decode()

    stored = Draft.objects.get(pk=draft.pk)
    assert f"It is in the Drafts folder (UID {stored.remote_uid})" in again
    assert list(drafts_on_server(user)) == [stored.remote_uid]
    assert [(kind, outcome) for kind, outcome, _, _ in _trail(account)] == [
        (MutationKind.DRAFT_APPENDED, MutationOutcome.ABANDONED),
        (MutationKind.DRAFT_APPENDED, MutationOutcome.PERFORMED),
    ]


def test_a_cut_between_the_new_copy_and_the_removal_of_the_old_is_finished_by_the_retry(
    user, reviewer, request
):
    proxy = _proxy(user, request, cut_before_command=b"STORE")
    account = drafting_account(user, append_mode="approved", port=proxy.port)
    draft = DraftFactory(email=answered_email(account))
    first = approve_draft(draft.pk, reviewer)  # no STORE yet: nothing superseded
    assert first.delivery_error is None and proxy.cuts == 0

    edited = edit_and_approve_draft(draft.pk, reviewer, "Dear Ms Example,\n\nMonday, then.\n")

    assert edited.delivery_error.code == 63004 and proxy.cuts == 1
    assert set(drafts_on_server(user)) == {first.draft.remote_uid, edited.draft.remote_uid}  # both, for now
    assert edited.draft.appended_at is None

    retry = deliver_draft(edited.draft)

    assert retry.found_existing and retry.removed == 1
    assert list(drafts_on_server(user)) == [edited.draft.remote_uid]
    assert [(kind, outcome, uid) for kind, outcome, uid, _ in _trail(account)] == [
        (MutationKind.DRAFT_APPENDED, MutationOutcome.PERFORMED, first.draft.remote_uid),
        (MutationKind.DRAFT_APPENDED, MutationOutcome.PERFORMED, edited.draft.remote_uid),
        (MutationKind.DRAFT_REPLACED, MutationOutcome.ABANDONED, None),
        (MutationKind.DRAFT_REPLACED, MutationOutcome.PERFORMED, first.draft.remote_uid),
    ]


def test_in_every_mode_a_drafting_run_writes_each_new_draft_to_the_drafts_folder(user):
    from answering.drafting.pipeline import ComposedDraft
    from answering.drafting.runs import draft_account

    account = drafting_account(user, append_mode="every")
    # Threaded and received within the drafting window, so the gate hands it to the run.
    answered = answered_email(account, thread_id=uuid.uuid4(), received_at=timezone.now())

    def stand_in_for_the_pipeline(email):  # a real ComposedDraft; the model is not what is tested
        return ComposedDraft(
            body="Dear Ms Buyer,\n\nyour order 4711 is confirmed.\n\nKind regards\n",
            intent="order",
            language="en",
            source_ids=(),
            verdict="ready",
            reasons=(),
            note="",
            model_alias="scripted-drafting",
            tokens={"generate": {"prompt": 10, "completion": 5}},
        )

    summary = draft_account(account, compose=stand_in_for_the_pipeline)

    draft = Draft.objects.get(email=answered)
    assert (summary.drafted, summary.delivered, summary.delivery_failed) == (1, 1, 0)
    copies = drafts_on_server(user)
    assert list(copies) == [draft.remote_uid]
    flags, message = copies[draft.remote_uid]
    assert "\\Draft" in flags and message["In-Reply-To"] == "<order-4711@customer.example>"
    assert [kind for kind, _, _, _ in _trail(account)] == [MutationKind.DRAFT_APPENDED]

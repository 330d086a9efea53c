"""The review queue in admin: listing, the review page, its permission, and each review move."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.contrib.auth.models import Permission
from django.urls import reverse
from django.utils import timezone

from answering.models import Draft, DraftStatus, Verdict
from tests.answering.drafts_support import DraftFactory
from tests.factories import FolderMappingFactory, MailAccountFactory
from tests.mailbox.factories import EmailFactory

pytestmark = pytest.mark.django_db

QUEUE = "admin:answering_draft_changelist"


def _page(draft: Draft) -> str:
    return reverse("admin:answering_draft_change", args=[draft.pk])


def _staff(django_user_model, *codenames: str):
    user = django_user_model.objects.create_user("clerk", password="pw-clerk-123", is_staff=True)
    user.user_permissions.add(
        *Permission.objects.filter(
            content_type__app_label__in=["answering", "mailbox"], codename__in=codenames
        )
    )
    return user


@pytest.fixture
def account():
    return MailAccountFactory(username="shop@shop.example")


def test_the_queue_lists_pending_drafts_first_then_the_rest_oldest_first(admin_client, account):
    done = DraftFactory(email=EmailFactory(account=account), status=DraftStatus.APPROVED)
    late = DraftFactory(email=EmailFactory(account=account))
    early = DraftFactory(email=EmailFactory(account=account))
    Draft.objects.filter(pk=early.pk).update(created_at=timezone.now() - timedelta(hours=2))
    Draft.objects.filter(pk=done.pk).update(created_at=timezone.now() - timedelta(hours=5))

    response = admin_client.get(reverse(QUEUE))

    assert response.status_code == 200
    listed = [row.pk for row in response.context["cl"].result_list]
    assert listed == [early.pk, late.pk, done.pk]
    page = response.content.decode()
    assert "Order" in page and "Ready" in page and str(account) in page


def test_the_queue_shows_no_mail_content(admin_client, account):
    DraftFactory(
        email=EmailFactory(account=account, subject="Secret merger", body="the body"), body="reply text"
    )

    page = admin_client.get(reverse(QUEUE)).content.decode()

    assert "Secret merger" not in page and "reply text" not in page


def test_the_review_page_shows_mail_and_draft_side_by_side_escaped(admin_client, account):
    email = EmailFactory(
        account=account,
        subject="<b>Order</b> 4711",
        body="Hello <script>alert(1)</script> please confirm",
        sender_name="Bea",
        sender_address="bea@customer.example",
    )
    draft = DraftFactory(
        email=email,
        verdict=Verdict.NEEDS_REVIEW,
        reasons=["the figure 4712 appears in no source", {"check": "language", "detail": "de, not en"}],
        note="The runtime reported no finish reason.",
    )

    page = admin_client.get(_page(draft)).content.decode()

    assert "Hello &lt;script&gt;alert(1)&lt;/script&gt; please confirm" in page
    assert "<script>alert(1)</script>" not in page
    assert "&lt;b&gt;Order&lt;/b&gt; 4711" in page
    assert "the figure 4712 appears in no source" in page and "language: de, not en" in page
    assert "The runtime reported no finish reason." in page
    assert 'id="answered-mail"' in page and 'name="body"' in page
    assert "thank you for your order 4711" in page
    assert 'name="_approve"' in page and 'name="_discard"' in page


def test_the_review_page_needs_the_change_permission_the_list_does_not(client, django_user_model, account):
    draft = DraftFactory(email=EmailFactory(account=account, body="private words"))
    client.force_login(_staff(django_user_model, "view_draft"))

    assert client.get(reverse(QUEUE)).status_code == 200
    response = client.get(_page(draft))
    assert response.status_code == 403 and "private words" not in response.content.decode()
    assert client.post(_page(draft), {"_approve": "1"}).status_code == 403
    assert Draft.objects.get(pk=draft.pk).status == DraftStatus.PENDING


def test_the_review_page_needs_the_right_to_read_mail_as_well(client, django_user_model, account):
    draft = DraftFactory(email=EmailFactory(account=account, body="private words"))
    client.force_login(_staff(django_user_model, "view_draft", "change_draft"))

    response = client.get(_page(draft))
    assert response.status_code == 403 and "private words" not in response.content.decode()
    assert client.post(_page(draft), {"_approve": "1"}).status_code == 403
    assert Draft.objects.get(pk=draft.pk).status == DraftStatus.PENDING


def test_approve_sets_the_status_and_the_reviewer(client, django_user_model, account):
    draft = DraftFactory(email=EmailFactory(account=account))
    clerk = _staff(django_user_model, "view_draft", "change_draft", "view_mail_content")
    client.force_login(clerk)

    response = client.post(
        _page(draft), {"_approve": "1", "body": draft.body.replace("\n", "\r\n")}, follow=True
    )

    stored = Draft.objects.get(pk=draft.pk)
    assert (stored.status, stored.reviewed_by, stored.body) == (DraftStatus.APPROVED, clerk, draft.body)
    assert stored.reviewed_at is not None
    assert "The draft is approved." in response.content.decode()


def test_approve_with_a_changed_text_is_refused_so_the_edit_is_not_lost(admin_client, account):
    draft = DraftFactory(email=EmailFactory(account=account))

    response = admin_client.post(_page(draft), {"_approve": "1", "body": "Something else entirely."})

    assert response.status_code == 200 and "Save edit and approve" in response.content.decode()
    assert "Something else entirely." in response.content.decode()  # what was typed is still there
    assert Draft.objects.get(pk=draft.pk).status == DraftStatus.PENDING


def test_save_edit_and_approve_stores_the_body_as_edited(admin_client, admin_user, account):
    draft = DraftFactory(email=EmailFactory(account=account))

    admin_client.post(_page(draft), {"_save_and_approve": "1", "body": "Dear Bea,\r\n\r\nconfirmed.\r\n"})

    stored = Draft.objects.get(pk=draft.pk)
    assert (stored.status, stored.body, stored.reviewed_by) == (
        DraftStatus.EDITED,
        "Dear Bea,\n\nconfirmed.\n",
        admin_user,
    )


def test_an_approved_draft_can_be_edited_again_but_not_approved_or_discarded_again(admin_client, account):
    draft = DraftFactory(email=EmailFactory(account=account), status=DraftStatus.APPROVED)

    page = admin_client.get(_page(draft)).content.decode()
    assert (
        'name="_approve"' not in page and 'name="_discard"' not in page and 'name="_save_and_approve"' in page
    )
    response = admin_client.post(_page(draft), {"_discard": "1"}, follow=True)
    assert "63006" in response.content.decode()
    admin_client.post(_page(draft), {"_save_and_approve": "1", "body": "Second thoughts."})

    assert Draft.objects.get(pk=draft.pk).status == DraftStatus.EDITED


def test_discard_marks_the_draft_discarded_and_the_page_turns_read_only(admin_client, account):
    draft = DraftFactory(email=EmailFactory(account=account))

    admin_client.post(_page(draft), {"_discard": "1"})

    assert Draft.objects.get(pk=draft.pk).status == DraftStatus.DISCARDED
    page = admin_client.get(_page(draft)).content.decode()
    assert 'name="body"' not in page and 'name="_save_and_approve"' not in page
    admin_client.post(_page(draft), {"_save_and_approve": "1", "body": "revive"})
    assert Draft.objects.get(pk=draft.pk).status == DraftStatus.DISCARDED


@pytest.mark.parametrize("body", ["   \r\n ", "x" * 20_001])
def test_a_blank_or_overlong_edit_is_refused_and_nothing_changes(admin_client, account, body):
    draft = DraftFactory(email=EmailFactory(account=account))

    response = admin_client.post(_page(draft), {"_save_and_approve": "1", "body": body})

    assert response.status_code == 200 and "errorlist" in response.content.decode()
    stored = Draft.objects.get(pk=draft.pk)
    assert stored.status == DraftStatus.PENDING and stored.body == draft.body


def test_a_delivery_failure_shows_an_error_and_keeps_the_approval(admin_client, account):
    account.drafting_append_mode = "approved"
    account.save()  # but no folder has the Drafts role
    FolderMappingFactory(account=account, alias="inbox", remote_name="INBOX", role="inbox")
    draft = DraftFactory(email=EmailFactory(account=account))

    response = admin_client.post(_page(draft), {"_approve": "1", "body": draft.body}, follow=True)

    page = response.content.decode()
    assert "The draft is approved." in page and "63001" in page and "Deliver again" in page
    assert Draft.objects.get(pk=draft.pk).status == DraftStatus.APPROVED
    assert "not in the Drafts folder yet" in page


def test_an_unknown_or_malformed_draft_id_is_404(admin_client):
    assert admin_client.get("/admin/answering/draft/not-a-uuid/change/").status_code == 404
    missing = "01900000-0000-7000-8000-000000000000"
    assert admin_client.get(f"/admin/answering/draft/{missing}/change/").status_code == 404


def test_no_draft_is_added_or_deleted_in_admin(admin_client, account):
    draft = DraftFactory(email=EmailFactory(account=account))

    assert admin_client.get(reverse("admin:answering_draft_add")).status_code == 403
    assert admin_client.get(reverse("admin:answering_draft_delete", args=[draft.pk])).status_code == 403

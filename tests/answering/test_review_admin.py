"""The review queue in admin: listing, the review page, its permission, and each review move.

Drafts that need realistic verdicts are built on drafting's shop mailbox
(tests/answering/drafting/support.py) and judged by answering.drafting.verdict.assess_draft,
so their reasons and findings are the ones the pipeline would store.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import timedelta

import pytest
from django.contrib.auth.models import Permission
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone
from django.utils.html import escape

from answering.drafting.verdict import assess_draft
from answering.models import Draft, DraftStatus, ReferenceChunk, ReferenceDocument, Verdict
from answering.review_page import marked_body
from mailbox.models import Email
from tests.answering.drafting.support import LETTER, Shop, build_shop
from tests.answering.drafts_support import DraftFactory
from tests.factories import FolderMappingFactory, MailAccountFactory
from tests.mailbox.factories import EmailFactory

pytestmark = pytest.mark.django_db

QUEUE = "admin:answering_draft_changelist"
PRICE = " It costs 4,321 euros."
LEAK = " Your neighbour's invoice INV-5531 came to 980 euros, paid to DE89 3704 0044 0532 0130 00."


def _page(draft: Draft) -> str:
    return reverse("admin:answering_draft_change", args=[draft.pk])


def _staff(django_user_model, *codenames: str):
    """An operator (every account's drafts: see_every_account) with `codenames` of answering and mailbox."""
    user = django_user_model.objects.create_user("clerk", password="pw-clerk-123", is_staff=True)
    user.user_permissions.add(
        *Permission.objects.filter(
            content_type__app_label__in=["answering", "mailbox"], codename__in=codenames
        ),
        Permission.objects.get(codename="see_every_account"),
    )
    return user


@dataclass
class ReviewShop:
    """drafting's shop, with another customer's invoice among the sources and a price list."""

    shop: Shop
    other: Email  # another customer's mail: its facts must not reach this reply unflagged
    chunk: ReferenceChunk

    @property
    def thread_ids(self) -> list:
        return [self.shop.earlier.pk]

    @property
    def source_ids(self) -> list:
        return [self.shop.source.pk, self.other.pk]


def review_shop() -> ReviewShop:
    shop = build_shop()
    other = EmailFactory(
        folder=shop.source.folder,
        subject="Invoice <i>INV-5531</i>",
        body="Dear Oak & Iron, your invoice INV-5531 of 980 euros: please pay to "
        "DE89 3704 0044 0532 0130 00.",
        sender_address="jon@othercustomer.example",
        sender_name="Jon Other",
    )
    document = ReferenceDocument.objects.create(account=shop.account, title="Price list <2024>")
    chunk = ReferenceChunk.objects.create(
        document=document, position=0, text="Oak table: 1,250 euros. Delivery within 5 working days."
    )
    return ReviewShop(shop, other, chunk)


def judged_draft(built: ReviewShop, body: str = LETTER, **fields) -> Draft:
    """A pending draft of the shop's answered mail whose verdict, reasons and findings are assess_draft's."""
    assessment = assess_draft(
        built.shop.answered,
        body,
        language="en",
        thread_ids=built.thread_ids,
        source_ids=built.source_ids,
        reference_ids=[built.chunk.pk],
    )
    return DraftFactory(
        email=built.shop.answered,
        body=body,
        intent="inquiry",
        thread_ids=built.thread_ids,
        source_ids=built.source_ids,
        reference_ids=[built.chunk.pk],
        verdict=assessment.verdict,
        reasons=list(assessment.reasons),
        findings=[finding.as_json() for finding in assessment.findings],
        assessed_at=timezone.now(),
        **fields,
    )


def with_letter(addition: str) -> str:
    return LETTER.replace("morning of delivery.", "morning of delivery." + addition)


def primary_buttons(page: str) -> list[str]:
    """The names of the submit buttons drawn as the primary (class "default") one."""
    return re.findall(r'<input type="submit" name="(\w+)"[^>]*class="default"', page)


def queue_rows(response) -> list[Draft]:
    return list(response.context["cl"].result_list)


@pytest.fixture
def account():
    return MailAccountFactory(username="shop@shop.example")


# --- the queue ------------------------------------------------------------------------------


def test_the_queue_lists_pending_drafts_first_then_the_rest_oldest_received_first(admin_client, account):
    now = timezone.now()
    done = DraftFactory(email=EmailFactory(account=account, received_at=now - timedelta(days=9)))
    Draft.objects.filter(pk=done.pk).update(status=DraftStatus.APPROVED)
    late = DraftFactory(email=EmailFactory(account=account, received_at=now - timedelta(hours=1)))
    early = DraftFactory(email=EmailFactory(account=account, received_at=now - timedelta(days=2)))
    # Drafted in the other order: the queue goes by when the mail came, not the draft.
    Draft.objects.filter(pk=late.pk).update(created_at=now - timedelta(hours=5))

    response = admin_client.get(reverse(QUEUE))

    assert response.status_code == 200
    assert [row.pk for row in queue_rows(response)] == [early.pk, late.pk, done.pk]
    page = response.content.decode()
    assert "Order" in page and "Ready" in page and str(account) in page


def test_a_reader_of_mail_sees_subject_sender_received_verdict_and_reason_count_escaped(
    admin_client, account
):
    email = EmailFactory(
        account=account,
        subject="<b>Secret</b> merger",
        sender_name="Bea <img src=x>",
        sender_address="bea@customer.example",
        body="the body",
        received_at=timezone.now().replace(year=2031, month=5, day=6, hour=7, minute=8),
    )
    DraftFactory(
        email=email,
        body="reply text",
        verdict=Verdict.NEEDS_REVIEW,
        reasons=["unsupported_amount: one", "subject_line: two", "markdown_heading: three"],
    )

    response = admin_client.get(reverse(QUEUE))

    page = response.content.decode()
    assert "&lt;b&gt;Secret&lt;/b&gt; merger" in page and "<b>Secret</b>" not in page
    assert "Bea &lt;img src=x&gt; &lt;bea@customer.example&gt;" in page and "<img src=x>" not in page
    assert "2031-05-06" in page
    assert re.search(r'class="field-reason_count">3<', page)
    assert 'class="verdict-badge verdict-needs_review"' in page and "Needs review" in page
    assert "reply text" not in page and "the body" not in page


def test_without_the_right_to_read_mail_the_queue_has_no_subject_or_sender(
    client, django_user_model, account
):
    DraftFactory(
        email=EmailFactory(
            account=account, subject="Secret merger", sender_address="bea@customer.example", body="the body"
        ),
        body="reply text",
    )
    client.force_login(_staff(django_user_model, "view_draft"))

    response = client.get(reverse(QUEUE))

    page = response.content.decode()
    assert response.status_code == 200
    assert "Secret merger" not in page and "bea@customer.example" not in page and "reply text" not in page
    assert "field-subject" not in page and "field-sender" not in page
    assert "field-received" in page and "field-verdict_badge" in page and "field-reason_count" in page
    (row,) = queue_rows(response)
    assert {"subject", "sender_address", "sender_name"} <= row.email.get_deferred_fields()


def test_the_queue_filters_by_verdict_and_by_account(admin_client, account):
    ready = DraftFactory(email=EmailFactory(account=account))
    flagged = DraftFactory(
        email=EmailFactory(account=account), verdict=Verdict.NEEDS_REVIEW, reasons=["subject_line: x"]
    )
    elsewhere = DraftFactory(email=EmailFactory(account=MailAccountFactory()))

    by_verdict = admin_client.get(reverse(QUEUE), {"verdict__exact": Verdict.NEEDS_REVIEW})
    by_account = admin_client.get(reverse(QUEUE), {"account__id__exact": account.pk})

    assert [row.pk for row in queue_rows(by_verdict)] == [flagged.pk]
    assert {row.pk for row in queue_rows(by_account)} == {ready.pk, flagged.pk}
    assert elsewhere.pk not in {row.pk for row in queue_rows(by_account)}


def test_the_queue_costs_the_same_queries_for_two_rows_as_for_eight(admin_client, account):
    def queries() -> int:
        with CaptureQueriesContext(connection) as captured:
            assert admin_client.get(reverse(QUEUE)).status_code == 200
        return len(captured)

    for _ in range(2):
        DraftFactory(email=EmailFactory(account=account), reasons=["subject_line: x"])
    two = queries()
    for _ in range(6):
        DraftFactory(email=EmailFactory(account=MailAccountFactory()), reasons=["subject_line: x"])

    assert queries() == two


# --- the review page ------------------------------------------------------------------------


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


def test_the_reply_goes_to_the_sender_without_a_warning(admin_client, account):
    email = EmailFactory(
        account=account,
        sender_name="Bea",
        sender_address="bea@customer.example",
        cc=[("Carl", "carl@customer.example")],
    )
    draft = DraftFactory(email=email)

    page = admin_client.get(_page(draft)).content.decode()

    section = page[page.index('id="reply-recipients"') : page.index('id="draft-sources"')]
    assert "Bea &lt;bea@customer.example&gt;" in section
    assert 'id="recipient-warning"' not in section and 'id="reply-to-header"' not in section
    assert "carl@customer.example" in section and "will not receive it" in section


def test_a_reply_to_another_address_is_shown_as_such_with_a_warning_escaped(admin_client, account):
    email = EmailFactory(
        account=account,
        sender_name="Bea",
        sender_address="bea@customer.example",
        reply_to=[("Bea <script>", "bea@cust0mer.example")],
    )
    draft = DraftFactory(email=email)

    page = admin_client.get(_page(draft)).content.decode()

    section = page[page.index('id="reply-recipients"') : page.index('id="draft-sources"')]
    warning = section[section.index('id="recipient-warning"') :]
    assert "bea@cust0mer.example" in warning[: warning.index("</p>")]
    assert "not to the sender bea@customer.example" in warning
    assert 'id="reply-to-header"' in section and "named by the mail's Reply-To" in section
    to = section[section.index('id="reply-to-recipients"') :]
    assert to.index("bea@cust0mer.example") < to.index("</td>")
    assert "Bea &lt;script&gt;" in section and "<script>" not in page.split("</head>", 1)[1]


def test_sources_link_to_their_email_pages_with_sender_subject_and_date_and_references_by_title(
    admin_client,
):
    built = review_shop()
    draft = judged_draft(built)

    page = admin_client.get(_page(draft)).content.decode()

    sources = page[page.index('id="draft-sources"') : page.index('id="answered-mail"')]
    for email in (built.shop.earlier, built.shop.source, built.other):
        assert reverse("admin:mailbox_email_change", args=[email.pk]) in sources
    assert "Jon Other &lt;jon@othercustomer.example&gt;" in sources
    assert "Invoice &lt;i&gt;INV-5531&lt;/i&gt;" in sources and "<i>INV-5531" not in sources
    assert "Dispatch note ZX-88120" in sources and "Your order ZX-88120" in sources
    assert "Price list &lt;2024&gt; (part 1)" in sources
    assert reverse("admin:answering_referencedocument_change", args=[built.chunk.document.pk]) in sources
    assert f"<code>{built.other.pk}</code>" not in sources  # linked, not listed as a bare id


def test_the_sources_are_read_in_one_query_however_many_there_are(admin_client):
    built = review_shop()
    few = judged_draft(built)

    def queries(draft: Draft) -> int:
        with CaptureQueriesContext(connection) as captured:
            assert admin_client.get(_page(draft)).status_code == 200
        return len(captured)

    baseline = queries(few)
    extra = [EmailFactory(folder=built.shop.source.folder).pk for _ in range(6)]
    Draft.objects.filter(pk=few.pk).update(source_ids=[*built.source_ids, *extra])

    assert queries(few) == baseline


def test_an_erased_source_is_listed_without_a_link(admin_client):
    built = review_shop()
    draft = judged_draft(built)
    gone = built.other.pk
    built.other.delete()

    page = admin_client.get(_page(draft)).content.decode()

    assert f"an email no longer stored (<code>{gone}</code>)" in page


def test_flagged_facts_are_marked_in_the_draft_and_link_the_mail_they_came_from(admin_client):
    built = review_shop()
    draft = judged_draft(built, with_letter(LEAK + PRICE))
    assert draft.verdict == Verdict.NEEDS_REVIEW

    page = admin_client.get(_page(draft)).content.decode()

    marked = page[page.index('id="draft-marked"') : page.index('id="review-form"')]
    other_page = reverse("admin:mailbox_email_change", args=[built.other.pk])
    iban = re.search(
        r'<mark class="finding" data-code="([\w ]+)"[^>]*>DE89 3704 0044 0532 0130 00</mark>', marked
    )
    assert iban is not None
    assert set(iban.group(1).split()) == {"unverified_payment_detail", "other_correspondent"}
    after_iban = marked[iban.end() :]
    assert after_iban.startswith('<sup class="finding-origins"><a class="finding-source" href="')
    assert other_page in after_iban[: after_iban.index("</sup>")]
    assert re.search(r'data-code="other_correspondent"[^>]*>INV-5531</mark>', marked)
    price = re.search(r'data-code="unsupported_amount"[^>]*>4,321 euros</mark>(.*?)</sup>', marked)
    assert price is not None and "no source" in price.group(1)
    assert marked.count("<mark") == 4  # the reference, the amount, the IBAN (two codes, one mark), the price


def test_the_marked_draft_escapes_the_body_and_skips_findings_that_do_not_fit(account):
    body = "Hi <script>alert(1)</script>, pay 42 € to <b>me</b>."
    start = body.index("<b>me</b>")
    draft = DraftFactory(
        email=EmailFactory(account=account),
        body=body,
        findings=[
            {"code": "other_correspondent", "kind": "email", "start": start, "end": start + 9, "origins": []},
            {"code": "overlapping", "kind": "x", "start": start + 2, "end": start + 5, "origins": []},
            {"code": "past_the_end", "kind": "x", "start": 3, "end": len(body) + 1, "origins": []},
            {"code": "not_a_number", "kind": "x", "start": "3", "end": 5, "origins": []},
            "not a finding",
        ],
    )

    html = str(marked_body(draft, []))

    assert "<script>" not in html and "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert '<mark class="finding" data-code="other_correspondent"' in html
    assert ">&lt;b&gt;me&lt;/b&gt;</mark>" in html
    assert html.count("<mark") == 1
    for skipped in ("overlapping", "past_the_end", "not_a_number"):
        assert skipped not in html


def test_on_a_draft_that_needs_review_save_edit_is_the_primary_button_and_reasons_have_boxes(
    admin_client,
):
    draft = judged_draft(review_shop(), with_letter(PRICE))

    page = admin_client.get(_page(draft)).content.decode()

    assert primary_buttons(page) == ["_save"]
    assert 'name="_approve"' in page and 'name="_save_and_approve"' in page
    (reason,) = draft.reasons
    assert f'<input type="checkbox" name="acknowledged" value="{reason}" id="ack-1">' in page


def test_on_a_ready_draft_approve_is_the_primary_button_and_nothing_asks_for_acknowledgement(
    admin_client,
):
    draft = judged_draft(review_shop())
    assert draft.verdict == Verdict.READY

    page = admin_client.get(_page(draft)).content.decode()

    assert primary_buttons(page) == ["_approve"]
    assert 'name="_save"' in page and 'name="acknowledged"' not in page


def test_approving_a_draft_that_needs_review_without_acknowledgement_is_refused_and_nothing_changes(
    admin_client,
):
    draft = judged_draft(review_shop(), with_letter(LEAK))
    assert len(draft.reasons) == 4

    response = admin_client.post(
        _page(draft), {"_approve": "1", "body": draft.body, "acknowledged": draft.reasons[:3]}
    )

    page = response.content.decode()
    assert response.status_code == 200 and "63008" in page and "1 not acknowledged" in page
    for reason in draft.reasons[:3]:
        assert f'value="{escape(reason)}" id="ack-' in page
    assert page.count(" checked>") == 3
    stored = Draft.objects.get(pk=draft.pk)
    assert (stored.status, stored.reviewed_by, stored.acknowledgements) == (DraftStatus.PENDING, None, [])


def test_approving_with_each_reason_acknowledged_records_the_reviewer(client, django_user_model):
    draft = judged_draft(review_shop(), with_letter(LEAK))
    clerk = _staff(django_user_model, "view_draft", "change_draft", "view_mail_content")
    client.force_login(clerk)

    response = client.post(
        _page(draft), {"_approve": "1", "body": draft.body, "acknowledged": draft.reasons}, follow=True
    )

    stored = Draft.objects.get(pk=draft.pk)
    assert (stored.status, stored.reviewed_by) == (DraftStatus.APPROVED, clerk)
    assert [entry["reason"] for entry in stored.acknowledgements] == draft.reasons
    assert {entry["by"] for entry in stored.acknowledgements} == {"clerk"}
    assert [entry["code"] for entry in stored.acknowledgements] == [
        "other_correspondent",
        "other_correspondent",
        "unverified_payment_detail",
        "other_correspondent",
    ]
    page = response.content.decode()
    assert "The draft is approved." in page and 'id="draft-acknowledgements"' in page


def test_save_edit_adding_an_unsupported_amount_turns_ready_into_needs_review(admin_client):
    draft = judged_draft(review_shop())
    assert draft.verdict == Verdict.READY

    response = admin_client.post(_page(draft), {"_save": "1", "body": with_letter(PRICE)}, follow=True)

    stored = Draft.objects.get(pk=draft.pk)
    assert (stored.status, stored.verdict, stored.body) == (
        DraftStatus.PENDING,
        Verdict.NEEDS_REVIEW,
        with_letter(PRICE),
    )
    assert [finding["code"] for finding in stored.findings] == ["unsupported_amount"]
    assert stored.reviewed_by is None  # saved, not reviewed
    page = response.content.decode()
    assert "Added: unsupported_amount. The verdict is now Needs review." in page
    assert primary_buttons(page) == ["_save"]


def test_save_edit_removing_every_reason_clears_them(admin_client):
    draft = judged_draft(review_shop(), with_letter(LEAK + PRICE))

    response = admin_client.post(_page(draft), {"_save": "1", "body": LETTER}, follow=True)

    stored = Draft.objects.get(pk=draft.pk)
    assert (stored.verdict, stored.reasons, stored.findings) == (Verdict.READY, [], [])
    page = response.content.decode()
    assert (
        "Cleared: other_correspondent ×3, unverified_payment_detail, unsupported_amount. "
        "The verdict is now Ready." in page
    )
    assert 'id="draft-marked"' not in page


def test_save_edit_of_the_same_text_says_the_verdict_stayed_the_same(admin_client):
    draft = judged_draft(review_shop(), with_letter(PRICE))

    response = admin_client.post(_page(draft), {"_save": "1", "body": draft.body}, follow=True)

    assert "The verdict stayed the same: Needs review." in response.content.decode()
    assert Draft.objects.get(pk=draft.pk).verdict == Verdict.NEEDS_REVIEW


def test_save_edit_is_only_for_pending_drafts(admin_client, account):
    draft = DraftFactory(email=EmailFactory(account=account), status=DraftStatus.APPROVED)

    assert 'name="_save"' not in admin_client.get(_page(draft)).content.decode()
    response = admin_client.post(_page(draft), {"_save": "1", "body": "Other words."}, follow=True)

    assert "63006" in response.content.decode()
    assert Draft.objects.get(pk=draft.pk).body == draft.body


def test_save_edit_and_approve_of_a_text_that_needs_review_asks_for_its_reasons_and_keeps_the_text(
    admin_client, admin_user
):
    draft = judged_draft(review_shop())
    typed = with_letter(PRICE)

    refused = admin_client.post(_page(draft), {"_save_and_approve": "1", "body": typed})

    page = refused.content.decode()
    assert refused.status_code == 200 and "63008" in page
    assert "Your edited text needs review" in page
    assert "It costs 4,321 euros." in page[page.index('name="body"') :]  # what was typed is kept
    reason = "unsupported_amount: The amount 4,321 euros appears in no message the draft was built from."
    assert f'value="{reason}"' in page
    stored = Draft.objects.get(pk=draft.pk)
    assert (stored.status, stored.body, stored.verdict) == (DraftStatus.PENDING, LETTER, Verdict.READY)

    admin_client.post(_page(draft), {"_save_and_approve": "1", "body": typed, "acknowledged": [reason]})

    stored = Draft.objects.get(pk=draft.pk)
    assert (stored.status, stored.verdict, stored.reviewed_by) == (
        DraftStatus.EDITED,
        Verdict.NEEDS_REVIEW,
        admin_user,
    )
    assert [(entry["reason"], entry["by"]) for entry in stored.acknowledgements] == [
        (reason, admin_user.get_username())
    ]

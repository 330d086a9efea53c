"""The Emails admin: compact metadata for viewers, content only with "view mail content".

Against the real PostgreSQL: the search box ranks with the product's lexical search, so a
stem matches and a fragment inside a word does not, as in search_emails.
"""

from __future__ import annotations

import re
import uuid
from datetime import UTC, datetime, timedelta

import pytest
from django.contrib.auth.models import Permission, User
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from mailbox.models import Direction, Email, Folder
from mailbox.services.lexical_search import refresh_term_stats
from mailbox.services.store import IncomingMessage, store_messages
from tests.factories import MailAccountFactory
from tests.mailbox.factories import synced_folder

pytestmark = pytest.mark.django_db

SUBJECT = "Confidential merger plan for Zanzibar"
SENDER = "chief.secret@example.org"
BODY = "Nobody at the console should read this sentence"
RECEIVED = datetime(2026, 11, 2, 10, tzinfo=UTC)
UUID_TEXT = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def _raw(n: int, subject: str = SUBJECT, body: str = BODY, sender: str = SENDER) -> bytes:
    return (
        f"From: Chief <{sender}>\r\nTo: Board <board@example.org>\r\nSubject: {subject} {n}\r\n"
        f"Message-ID: <admin-{n}@example.org>\r\nDate: Mon, 2 Nov 2026 10:00:00 +0000\r\n\r\n"
        f"{body} ({n}).\r\n"
    ).encode()


def _store(folder: Folder, messages: list[bytes], first_uid: int = 1) -> list[Email]:
    incoming = [
        IncomingMessage(
            uidvalidity=1,
            uid=first_uid + n,
            size=len(raw),
            received_at=RECEIVED + timedelta(hours=first_uid + n),  # later UIDs arrived later
            raw=raw,
        )
        for n, raw in enumerate(messages)
    ]
    assert store_messages(folder, incoming).stored == len(messages)
    return list(Email.objects.filter(folder=folder, uid__gte=first_uid).order_by("uid"))


def _staff(client, *codenames: str) -> User:
    """An operator (see_every_account) with `codenames`; people: tests/accounts/test_people_admin.py."""
    user = User.objects.create_user(f"staff-{uuid.uuid4().hex[:8]}", password="pw", is_staff=True)
    user.user_permissions.add(*Permission.objects.filter(codename__in=(*codenames, "see_every_account")))
    client.force_login(user)
    return user


@pytest.fixture
def viewer(client):
    """Staff who may see email rows and manage accounts, but not read mail."""
    _staff(client, "view_email", "view_folder", "view_mailaccount", "change_mailaccount", "add_mailaccount")
    return client


@pytest.fixture
def reader(client):
    """Staff who may see email rows and read their content."""
    _staff(client, "view_email", "view_mail_content")
    return client


def _page(client, account=None, **params) -> str:
    if account is not None:
        params["account__id__exact"] = account.pk
    response = client.get(reverse("admin:mailbox_email_changelist"), params)
    assert response.status_code == 200
    return response.content.decode()


def _column(page: str, field: str) -> list[str]:
    cells = re.findall(rf'<t[dh] class="field-{field}[^"]*">(.*?)</t[dh]>', page, re.S)
    return [re.sub(r"<[^>]+>", "", cell).strip() for cell in cells]


def _row_texts(page: str) -> list[str]:
    """The visible text of every cell of the result table (links' targets left out)."""
    table = page.split('id="result_list"', 1)[1].split("</table>", 1)[0]
    cells = re.findall(r"<t[dh][^>]*>(.*?)</t[dh]>", table, re.S)
    return [re.sub(r"<[^>]+>", "", cell).strip() for cell in cells]


# --- the permission ----------------------------------------------------------------


def test_view_mail_content_is_a_permission_of_its_own_on_email():
    permission = Permission.objects.get(codename="view_mail_content")

    assert permission.content_type.app_label == "mailbox"
    assert permission.content_type.model == "email"
    managing = User.objects.create_user("manager", is_staff=True)
    managing.user_permissions.add(*Permission.objects.filter(content_type__app_label="accounts"))
    managing.user_permissions.add(Permission.objects.get(codename="view_email"))
    assert not User.objects.get(pk=managing.pk).has_perm("mailbox.view_mail_content")


# --- without the permission: metadata only -----------------------------------------


def test_without_the_permission_the_list_shows_metadata_and_no_content(viewer):
    folder = synced_folder(alias="inbox")
    _store(folder, [_raw(0), _raw(1)])

    page = _page(viewer, folder.account)

    assert _column(page, "folder_alias") == ["inbox", "inbox"]
    assert len(_column(page, "received")) == 2
    assert all(re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d", cell) for cell in _column(page, "received"))
    assert _column(page, "size")[0].endswith("bytes")
    assert _column(page, "availability")[0] == "Available"
    assert _column(page, "subject_line") == [] and _column(page, "sender") == []
    assert SUBJECT not in page and SENDER not in page and "Chief" not in page and BODY not in page
    assert 'id="searchbar"' not in page


def test_without_the_permission_a_search_term_is_ignored_not_answered(viewer):
    folder = synced_folder(alias="inbox")
    _store(folder, [_raw(0), _raw(1, subject="Weekly lunch menu")])

    page = _page(viewer, folder.account, q="Zanzibar")

    # Both rows, as with no term: a narrowed count would tell who mentions Zanzibar.
    assert len(_column(page, "received")) == 2
    assert not any("Zanzibar" in text for text in _row_texts(page))


def test_without_the_permission_the_page_shows_no_content(viewer):
    folder = synced_folder(alias="inbox")
    (email,) = _store(folder, [_raw(0)])
    assert BODY in email.text_body and SUBJECT in email.subject  # the row does hold content

    response = viewer.get(reverse("admin:mailbox_email_change", args=[email.pk]))
    page = response.content.decode()

    assert response.status_code == 200
    assert str(email.size_bytes) in page
    for private in (BODY, SUBJECT, SENDER, "board@example.org", "admin-0@example.org"):
        assert private not in page


# --- with the permission: content ----------------------------------------------------


def test_with_the_permission_the_list_shows_subject_sender_date_and_folder(reader):
    folder = synced_folder(alias="archive")
    _store(folder, [_raw(0)])

    page = _page(reader, folder.account)

    assert _column(page, "subject_line") == [f"{SUBJECT} 0"]
    assert _column(page, "sender") == [f"Chief &lt;{SENDER}&gt;"]
    assert _column(page, "folder_alias") == ["archive"]
    assert len(_column(page, "received")) == 1
    assert 'id="searchbar"' in page


def test_with_the_permission_the_page_shows_subject_sender_recipients_and_body(reader):
    folder = synced_folder(alias="inbox")
    (email,) = _store(folder, [_raw(0)])

    page = reader.get(reverse("admin:mailbox_email_change", args=[email.pk])).content.decode()

    assert f"{SUBJECT} 0" in page
    assert SENDER in page
    assert "board@example.org" in page
    assert f"{BODY} (0)." in page


def test_the_page_folds_technical_fields_away_and_shows_the_folder_and_sender_in_full(reader):
    folder = synced_folder(alias="inbox")
    long_sender = "someone.with.a.rather.long.mailbox.name@departments.example.org"
    (email,) = _store(folder, [_raw(0, sender=long_sender)])

    page = reader.get(reverse("admin:mailbox_email_change", args=[email.pk])).content.decode()

    # The From whole, never cut with an ellipsis as the list's narrow column is.
    from_row = re.search(r'field-from_shown.*?<div class="readonly">(.*?)</div>', page, re.S)
    assert from_row is not None and from_row.group(1) == f"Chief &lt;{long_sender}&gt;"
    # The folder by its alias, not "<account pk>:INBOX".
    folder_row = re.search(r'field-folder_name.*?<div class="readonly">(.*?)</div>', page, re.S)
    assert folder_row is not None and folder_row.group(1) == "inbox"
    assert f"{folder.account_id}:INBOX" not in page
    # UIDVALIDITY, UID, TNEF and defects live in one collapsed fieldset at the end.
    main, technical = page.split("Technical details", 1)
    assert "collapse" in main.rsplit("<fieldset", 1)[1]
    for name in ("remote_folder", "uidvalidity_shown", "uid_shown", "tnef_shown", "defects_shown"):
        assert f"field-{name}" in technical and f"field-{name}" not in main
    for unreadable in ("Uidvalidity", "Unexpanded tnef"):
        assert unreadable not in page


def test_superusers_hold_the_permission(admin_client):
    folder = synced_folder(alias="inbox")
    _store(folder, [_raw(0)])

    assert _column(_page(admin_client, folder.account), "subject_line") == [f"{SUBJECT} 0"]


def test_html_in_a_subject_or_body_is_shown_as_text(reader):
    folder = synced_folder(alias="inbox")
    (email,) = _store(folder, [_raw(0, subject="<b>bold</b>", body="<script>alert(1)</script>")])

    listing = _page(reader, folder.account)
    page = reader.get(reverse("admin:mailbox_email_change", args=[email.pk])).content.decode()

    assert "<b>bold</b>" not in listing and "&lt;b&gt;bold&lt;/b&gt;" in listing
    assert "<script>alert(1)</script>" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page


# --- compact rows --------------------------------------------------------------------


@pytest.mark.parametrize("fixture", ["viewer", "reader"])
def test_rows_show_no_uuid_and_cut_long_subjects_to_one_line(fixture, request):
    client = request.getfixturevalue(fixture)
    folder = synced_folder(alias="inbox")
    _store(folder, [_raw(0, subject="Quarterly " * 40, sender="a." * 60 + "@example.org")])

    page = _page(client, folder.account)
    texts = _row_texts(page)

    assert texts and not any(UUID_TEXT.search(text) for text in texts)
    assert all("\n" not in text for text in texts)
    if fixture == "reader":
        (subject,) = _column(page, "subject_line")
        (sender,) = _column(page, "sender")
        assert len(subject) <= 90 and subject.endswith("…")
        assert len(sender.replace("&lt;", "<").replace("&gt;", ">")) <= 48
    assert "white-space: nowrap" in page  # the list's own style keeps each row to one line


@pytest.mark.parametrize("fixture", ["viewer", "reader"])
def test_the_list_costs_the_same_queries_for_one_email_or_many(fixture, request):
    client = request.getfixturevalue(fixture)
    folder = synced_folder(alias="inbox")
    _store(folder, [_raw(0)])
    with CaptureQueriesContext(connection) as one:
        _page(client, folder.account)
    _store(folder, [_raw(n) for n in range(1, 7)], first_uid=10)
    with CaptureQueriesContext(connection) as many:
        page = _page(client, folder.account)

    assert len(_column(page, "folder_alias")) == 7
    assert len(many.captured_queries) == len(one.captured_queries)
    loaded = " ".join(q["sql"] for q in many.captured_queries if '"mailbox_email"."received_at"' in q["sql"])
    assert '"search_vector"' not in loaded  # the index column is never loaded for a list
    if fixture == "viewer":
        assert '"text_body"' not in loaded and '"subject"' not in loaded


# --- filters ---------------------------------------------------------------------------


def test_filters_by_account_folder_and_direction(reader):
    account = MailAccountFactory(account_id="filtered")
    inbox, sent = synced_folder(account, "inbox"), synced_folder(account, "sent")
    _store(inbox, [_raw(0), _raw(1)])
    sent_rows = _store(sent, [_raw(2)])
    Email.objects.filter(pk=sent_rows[0].pk).update(direction=Direction.OUTGOING)
    other = synced_folder(alias="inbox")
    _store(other, [_raw(3)])

    assert len(_column(_page(reader, account), "received")) == 3
    assert _column(_page(reader, account, folder=sent.pk), "subject_line") == [f"{SUBJECT} 2"]
    assert len(_column(_page(reader, account, folder=inbox.pk), "received")) == 2
    assert _column(_page(reader, account, direction="outgoing"), "subject_line") == [f"{SUBJECT} 2"]
    assert len(_column(_page(reader, account, direction="incoming"), "received")) == 2
    assert _column(_page(reader, folder=other.pk), "subject_line") == [f"{SUBJECT} 3"]
    assert _column(_page(reader, folder="not-a-number"), "received") == []


def test_the_folder_filter_offers_the_chosen_accounts_folders(reader):
    account = MailAccountFactory(account_id="chosen")
    synced_folder(account, "inbox")
    synced_folder(account, "receipts")
    synced_folder(MailAccountFactory(account_id="another"), "elsewhere")

    page = _page(reader, account)

    assert "chosen / inbox" in page and "chosen / receipts" in page
    assert "another / elsewhere" not in page


# --- search ------------------------------------------------------------------------------


def test_search_ranks_with_the_products_lexical_search_best_first(reader):
    folder = synced_folder(alias="inbox")
    _store(
        folder,
        [
            _raw(0, subject="Invoice for October", body="Please pay the invoice for October."),
            _raw(1, subject="Lunch", body="The invoice is attached somewhere below."),
            _raw(2, subject="Holiday plans", body="Nothing about money here."),
        ],
    )

    page = _page(reader, folder.account, q="invoice")

    # Newest first would put Lunch first: the subject match ranks above it.
    assert _column(_page(reader, folder.account), "subject_line")[:2] == ["Holiday plans 2", "Lunch 1"]
    assert _column(page, "subject_line") == ["Invoice for October 0", "Lunch 1"]


def test_search_matches_stems_and_not_fragments_inside_words(reader):
    folder = synced_folder(alias="inbox")
    _store(folder, [_raw(0, subject="Invoice", body="one invoice"), _raw(1, subject="Zanzibar trip")])
    refresh_term_stats()  # the hourly word snapshot is what relates a word's forms

    # "invoices" finds "invoice" by its English stem; icontains would not.
    assert _column(_page(reader, folder.account, q="invoices"), "subject_line") == ["Invoice 0"]
    # A fragment inside a word is not a word: icontains would find "Zanzibar".
    assert _column(_page(reader, folder.account, q="anzib"), "subject_line") == []


def test_search_stays_within_the_filters(reader):
    account = MailAccountFactory()
    inbox, archive = synced_folder(account, "inbox"), synced_folder(account, "archive")
    _store(inbox, [_raw(0, subject="Invoice inbox")])
    _store(archive, [_raw(1, subject="Invoice archive")])

    page = _page(reader, account, q="invoice", folder=archive.pk)

    assert _column(page, "subject_line") == ["Invoice archive 1"]


def test_a_search_the_product_refuses_says_why_and_lists_nothing(reader):
    folder = synced_folder(alias="inbox")
    _store(folder, [_raw(0)])

    page = _page(reader, folder.account, q="x" * 513)

    assert _column(page, "received") == []
    assert "51002" in page and "queryText" in page


def test_email_pages_add_change_and_delete_nothing(admin_client):
    (email,) = _store(synced_folder(), [_raw(1)])
    change = reverse("admin:mailbox_email_change", args=[email.pk])

    assert admin_client.get(reverse("admin:mailbox_email_add")).status_code == 403
    assert admin_client.post(change, {"subject": "rewritten"}).status_code == 403
    assert admin_client.get(reverse("admin:mailbox_email_delete", args=[email.pk])).status_code == 403
    assert Email.objects.get(pk=email.pk).subject != "rewritten"

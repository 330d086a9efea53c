"""Reference documents from uploaded files: read through mailbox.extraction, refused with 63009.

Every upload goes through the real admin add page as a staff person holding a role on the
account, with the vendored files of tests/data/attachments.
"""

from __future__ import annotations

import logging
import unicodedata
from pathlib import Path

import pytest
from django.contrib.auth.models import Permission
from django.core.files.uploadedfile import SimpleUploadedFile

from accounts.models import AccountMembership, MailAccount, MembershipRole
from answering.drafting.references import search_references
from answering.models import ReferenceChunk, ReferenceDocument
from answering.services import reference_uploads
from answering.services.reference_uploads import UNNAMED, safe_file_name
from mailbox.services import embedding
from mailfathom.core.errors import Code
from mailfathom.providers import get_embedder
from tests.factories import MailAccountFactory
from tests.privacy import remember

pytestmark = pytest.mark.django_db

FILES = Path(__file__).resolve().parents[1] / "data" / "attachments"
ADD = "/admin/answering/referencedocument/add/"
DOCX = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
CODE = str(int(Code.REFERENCE_FILE_NOT_READ))


@pytest.fixture
def account() -> MailAccount:
    return MailAccountFactory(account_id="workshop")


@pytest.fixture
def staff_client(client, django_user_model, account):
    """A staff person who reviews drafts for `account` and may manage its reference documents."""
    user = django_user_model.objects.create_user("desk", password="pw-desk-12345", is_staff=True)
    user.user_permissions.add(
        *Permission.objects.filter(
            content_type__app_label="answering", codename__endswith="_referencedocument"
        )
    )
    AccountMembership.objects.create(account=account, user=user, role=MembershipRole.REVIEWER)
    client.force_login(user)
    return client


def upload(name: str, *, content_type: str = "application/octet-stream", stored_as: str | None = None):
    return SimpleUploadedFile(stored_as or name, (FILES / name).read_bytes(), content_type=content_type)


def post(client, account: MailAccount, file=None, *, title: str = "", text: str = ""):
    data = {"account": account.pk, "title": title, "text": text}
    if file is not None:
        data["upload"] = file
    return client.post(ADD, data)


def upload_error(response) -> str:
    assert response.status_code == 200, "the form is shown again, not saved"
    return " ".join(response.context["adminform"].form.errors.get("upload", []))


@pytest.mark.parametrize(
    ("name", "content_type", "words"),
    [
        ("invoice.pdf", "application/pdf", ["Druckerreparatur", "Kyocera", "Musterbank"]),
        ("contract.docx", DOCX, ["Wartungsvertrag", "Tonerwechsel", "49,90 EUR"]),
        # Browsers often declare octet-stream: the extension decides.
        ("quote.xlsx", "application/octet-stream", ["Fixierwalze", "Arbeitszeit", "129.5"]),
    ],
)
def test_an_uploaded_file_is_read_and_its_words_are_in_the_chunks(
    staff_client, account, name, content_type, words
):
    response = post(staff_client, account, upload(name, content_type=content_type))

    assert response.status_code == 302, response.content[:3000]
    document = ReferenceDocument.objects.get()
    chunks = " ".join(document.chunks.values_list("text", flat=True))
    assert all(word in chunks for word in words), chunks
    assert document.title == name, "a blank title is the file's name"
    assert (document.source_file_name, document.source_outcome) == (name, "ok")
    assert document.source_media_type == content_type
    assert document.source_characters == len(document.text) > 0


def test_a_title_given_is_kept_over_the_file_name(staff_client, account):
    response = post(staff_client, account, upload("contract.docx"), title="Maintenance contract")

    assert response.status_code == 302
    assert ReferenceDocument.objects.get().title == "Maintenance contract"


@pytest.mark.parametrize(
    ("name", "plain_words"),
    [
        ("hostile-encrypted.pdf", "encrypted (a password is needed to open it)"),
        ("hostile-zip-bomb.docx", "too large to read"),
        ("hostile-truncated.pdf", "unreadable"),
    ],
)
def test_a_file_that_cannot_be_read_is_a_coded_form_error_and_nothing_is_stored(
    staff_client, account, name, plain_words
):
    error = upload_error(post(staff_client, account, upload(name)))

    assert f"MailFathom error {CODE}:" in error and plain_words in error, error
    assert "nothing was stored" in error
    assert not ReferenceDocument.objects.exists() and not ReferenceChunk.objects.exists()


def test_a_kind_not_read_is_unsupported(staff_client, account):
    program = SimpleUploadedFile("setup.exe", b"MZ\x90\x00" * 64, content_type="application/x-msdownload")

    error = upload_error(post(staff_client, account, program))

    assert CODE in error and "unsupported" in error
    assert not ReferenceDocument.objects.exists()


def test_a_kind_switched_off_is_unsupported_here(staff_client, account, mailfathom_settings):
    mailfathom_settings(attachment_text_kinds="docx,text")

    error = upload_error(post(staff_client, account, upload("invoice.pdf", content_type="application/pdf")))

    assert CODE in error and "switched off" in error
    assert not ReferenceDocument.objects.exists()


def test_a_file_over_the_size_setting_is_refused_before_extraction(
    staff_client, account, mailfathom_settings, monkeypatch
):
    mailfathom_settings(attachment_text_max_bytes=1024)
    started: list[str] = []
    monkeypatch.setattr(reference_uploads, "extract_text", lambda *args, **kwargs: started.append("read"))

    error = upload_error(post(staff_client, account, upload("contract.docx", content_type=DOCX)))

    assert CODE in error and "too large" in error and "1,024" in error, error
    assert started == [], "the file was handed to extraction"
    assert not ReferenceDocument.objects.exists()


def test_a_file_at_the_size_setting_is_read(staff_client, account, mailfathom_settings):
    size = (FILES / "invoice.pdf").stat().st_size
    mailfathom_settings(attachment_text_max_bytes=max(size, 1024))

    response = post(staff_client, account, upload("invoice.pdf", content_type="application/pdf"))

    assert response.status_code == 302


def test_pasted_text_still_works_and_records_no_file(staff_client, account):
    response = post(staff_client, account, title="Opening hours", text="Open Monday to Friday, 8 to 17.")

    assert response.status_code == 302, response.content[:3000]
    document = ReferenceDocument.objects.get()
    assert document.text == "Open Monday to Friday, 8 to 17."
    assert (document.source_file_name, document.source_outcome, document.source_characters) == ("", "", None)


def test_pasted_text_needs_a_title(staff_client, account):
    response = post(staff_client, account, text="Open Monday to Friday, 8 to 17.")

    assert response.status_code == 200
    assert response.context["adminform"].form.errors["title"]
    assert not ReferenceDocument.objects.exists()


def test_an_edit_keeps_the_source_until_the_text_changes(staff_client, account):
    post(staff_client, account, upload("contract.docx", content_type=DOCX))
    document = ReferenceDocument.objects.get()
    change = f"/admin/answering/referencedocument/{document.pk}/change/"

    # A browser sends the text back with CRLF line ends: still the file's text.
    same_text = document.text.replace("\n", "\r\n")
    staff_client.post(change, {"account": account.pk, "title": "Contract", "text": same_text})
    document.refresh_from_db()
    assert (document.title, document.source_file_name) == ("Contract", "contract.docx")

    staff_client.post(change, {"account": account.pk, "title": "Contract", "text": "Rewritten by hand."})
    document.refresh_from_db()
    assert document.text == "Rewritten by hand." and document.source_file_name == ""
    assert list(document.chunks.values_list("text", flat=True)) == ["Rewritten by hand."]


def test_the_drafting_reference_search_finds_the_uploaded_text(staff_client, account, answering):
    embedder = get_embedder()
    assert embedder is not None
    embedding.activate_profile(embedder)
    post(staff_client, account, upload("contract.docx", content_type=DOCX))
    document = ReferenceDocument.objects.get()
    assert all(chunk.profile_id is not None for chunk in document.chunks.all()), "embedded like mail"

    found = search_references(
        account_pk=account.pk,
        account_id=account.account_id,
        condensed="price of a toner change",
        raw="Guten Tag, was kostet ein Tonerwechsel?",
        limit=5,
        max_characters=1200,
    )

    assert found and found[0].subject == "contract.docx"
    assert "Tonerwechsel\t49,90 EUR" in found[0].extract


HOSTILE_NAMES = [
    "../../../../etc/passwd.pdf",
    "..\\..\\windows\\system32\\invoice.pdf",
    "in\x00voice.pdf",
    "invoice\x1b[31m\r\n.pdf",
    "report\u202efdp.exe",  # reads as "reportexe.pdf" in a right-to-left run
    "\u200b\u2066hidden\u2069.pdf",
    "." * 8,
    "a" * 5000 + ".pdf",
]


@pytest.mark.parametrize("raw", HOSTILE_NAMES)
def test_a_hostile_file_name_is_cleaned(raw):
    name = safe_file_name(raw)

    assert 0 < len(name) <= 200
    assert "/" not in name and "\\" not in name and not name.startswith(".")
    assert not [ch for ch in name if unicodedata.category(ch).startswith("C")], repr(name)


def test_cleaning_keeps_what_a_name_says():
    assert safe_file_name("../../etc/passwd.pdf") == "passwd.pdf"
    assert safe_file_name("C:\\Users\\desk\\Price list 2024.pdf") == "Price list 2024.pdf"
    assert safe_file_name("report\u202efdp.exe") == "reportfdp.exe"
    assert safe_file_name("a" * 5000 + ".pdf").endswith("a.pdf")
    assert safe_file_name("........") == UNNAMED


@pytest.mark.parametrize("raw", ["..\\..\\secret\u202efdp.docx", "x" * 400 + ".docx", "tab\there.docx"])
def test_a_hostile_file_name_through_the_admin_becomes_a_clean_title(staff_client, account, raw):
    response = post(staff_client, account, upload("contract.docx", content_type=DOCX, stored_as=raw))

    assert response.status_code == 302, response.content[:3000]
    document = ReferenceDocument.objects.get()
    for stored in (document.title, document.source_file_name):
        assert 0 < len(stored) <= 200 and "\\" not in stored and "/" not in stored
        assert not [ch for ch in stored if unicodedata.category(ch).startswith("C")], repr(stored)
    assert "Wartungsvertrag" in document.text


def test_no_log_line_carries_the_file_name_or_its_text(staff_client, account, caplog):
    secret_name = "Geheimvertrag Kundenliste.docx"
    remember(secret_name, "Wartungsvertrag", "Tonerwechsel", "Druckerreparatur")  # checked at session end too
    caplog.set_level(logging.DEBUG)

    post(staff_client, account, upload("contract.docx", content_type=DOCX, stored_as=secret_name))
    post(staff_client, account, upload("hostile-encrypted.pdf", stored_as="Geheim verschluesselt.pdf"))
    post(staff_client, account, upload("invoice.pdf"), title="Rechnung")

    assert ReferenceDocument.objects.count() == 2
    logged = "\n".join(record.getMessage() for record in caplog.records)
    assert "reference upload read: outcome=ok" in logged, "the read itself is logged, by counts"
    for private in (secret_name, "Geheimvertrag", "verschluesselt", "Wartungsvertrag", "Druckerreparatur"):
        assert private not in logged


def test_the_add_page_offers_the_file_field_as_a_multipart_form(staff_client):
    page = staff_client.get(ADD).content.decode()

    assert 'enctype="multipart/form-data"' in page and 'type="file" name="upload"' in page
    assert "PDF, Word (DOCX), Excel (XLSX)" in page

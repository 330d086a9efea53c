"""get_email_content: refusals at every bound, scope, damaged copies, bodies, truncation, attachments."""

from __future__ import annotations

import hashlib
import typing
import uuid
import zlib
from datetime import UTC, datetime
from email.message import EmailMessage
from itertools import count

import pytest
from pydantic import BaseModel

from accounts.models import FolderRole
from mailbox.models import Availability, Email, Folder, RawMessage, RepairRequest
from mailbox.services import content
from mailbox.services.content import ContentResult, get_email_content
from mailbox.services.store import IncomingMessage, store_messages
from mailfathom.core.errors import MailFathomError
from tests.factories import MailAccountFactory
from tests.mailbox.factories import mapped_folder

pytestmark = pytest.mark.django_db

RECEIVED = datetime(2025, 6, 3, 10, 31, tzinfo=UTC)
_uids = count(1)


def message(body: str = "Hello Bob", subject: str = "Quarterly report") -> EmailMessage:
    msg = EmailMessage()
    msg["From"] = "Alice Example <alice@example.org>"
    msg["To"] = "Bob <bob@example.net>, carol@example.net"
    msg["Cc"] = "Dan <dan@example.net>"
    msg["Reply-To"] = "Replies <replies@example.org>"
    msg["Subject"] = subject
    msg["Date"] = "Tue, 03 Jun 2025 12:30:00 +0200"
    msg["Message-ID"] = "<abc.123@example.org>"
    msg["In-Reply-To"] = "<prev@example.org>"
    msg["References"] = "<root@example.org> <prev@example.org>"
    msg.set_content(body)
    return msg


def store(folder: Folder, msg: EmailMessage | bytes | None, withheld: str = "", flags=("\\Seen",)) -> Email:
    raw = msg.as_bytes() if isinstance(msg, EmailMessage) else msg
    result = store_messages(
        folder,
        [
            IncomingMessage(
                uidvalidity=1,
                uid=next(_uids),
                size=len(raw) if raw else 123456,
                received_at=RECEIVED,
                flags=tuple(flags),
                raw=raw,
                withheld=withheld,
            )
        ],
    )
    return Email.objects.get(pk=result.email_ids[0])


def read(*emails, **kwargs) -> ContentResult:
    return get_email_content([str(e.pk) if isinstance(e, Email) else e for e in emails], **kwargs)


def refusal(ids) -> MailFathomError:
    with pytest.raises(MailFathomError) as caught:
        get_email_content(ids)
    return caught.value


@pytest.fixture
def account():
    return MailAccountFactory(account_id="billing", display_name="Shared Billing")


@pytest.fixture
def inbox(account):
    return mapped_folder(account, "inbox", role=FolderRole.INBOX)


# --- the list and its elements ------------------------------------------------------


def test_no_ids_is_refused_with_51005():
    assert refusal([]).code == 51005


def test_eleven_ids_are_refused_with_51005():
    assert refusal([str(uuid.uuid4()) for _ in range(11)]).code == 51005


def test_one_and_ten_ids_are_answered(inbox):
    email = store(inbox, message())
    assert [e.stored_email_id for e in read(email).emails] == [email.pk]
    ten = [str(email.pk)] + [str(uuid.uuid4()) for _ in range(9)]
    assert len(get_email_content(ten).emails) == 10


def test_count_is_checked_before_any_element_is_parsed():
    # Eleven elements that are not UUIDs: the count refusal comes first.
    assert refusal(["not-a-uuid"] * 11).code == 51005


def test_an_endless_list_is_refused_after_reading_eleven_elements():
    produced = count()
    endless = (f"{next(produced)}" for _ in iter(int, 1))
    assert refusal(endless).code == 51005
    assert next(produced) == 11


def test_a_string_instead_of_a_list_is_refused_with_51005():
    assert refusal(str(uuid.uuid4())).code == 51005


def test_element_of_64_characters_is_parsed_and_of_65_is_refused_unparsed(monkeypatch):
    parsed: list[str] = []

    def recording(text: str) -> uuid.UUID:
        parsed.append(text)
        return uuid.uuid4()

    monkeypatch.setattr(content, "_uuid_from_text", recording)
    result = get_email_content(["a" * 64])
    assert parsed == ["a" * 64]
    assert result.emails[0].failure.code == 53002
    assert refusal(["a" * 65]).code == 51004
    assert parsed == ["a" * 64]


@pytest.mark.parametrize(
    "element",
    [
        "",
        "   ",
        "not-a-uuid",
        "1234",
        "g" * 32,
        "{01890a5d-ac96-774b-bcce-b302099a8057",
        "01890a5d-ac96-774b-bcce-b302099a805",
        "01890a5dac96-774b-bcce-b302099a8057-",
        "+1890a5dac96774bbcceb302099a8057",
        "0189_a5dac96774bbcceb302099a8057",
        " 01890a5d-ac96-774b-bcce-b302099a8057",
        42,
        None,
    ],
)
def test_text_that_is_no_uuid_is_refused_with_51004(element):
    assert refusal([element]).code == 51004


@pytest.mark.parametrize(
    "zero",
    [
        "00000000-0000-0000-0000-000000000000",
        "00000000000000000000000000000000",
        "{00000000-0000-0000-0000-000000000000}",
    ],
)
def test_the_all_zero_uuid_is_refused_with_51004(zero):
    assert refusal([zero]).code == 51004


def test_51004_names_neither_the_value_nor_its_position():
    error = refusal([str(uuid.uuid4()), "secret-looking-value"])
    assert "secret-looking-value" not in error.message
    assert "2" not in error.message and "second" not in error.message


@pytest.mark.parametrize(
    "spelling",
    [
        lambda u: str(u).upper(),
        lambda u: u.hex,
        lambda u: "{" + str(u) + "}",
        lambda u: "{" + u.hex.upper() + "}",
    ],
)
def test_one_email_named_twice_in_any_spelling_is_refused_with_51006(spelling):
    email_id = uuid.uuid4()
    assert refusal([str(email_id), spelling(email_id)]).code == 51006


def test_other_spellings_of_one_id_each_read_the_email(inbox):
    email = store(inbox, message())
    for spelling in (str(email.pk).upper(), email.pk.hex, "{" + str(email.pk) + "}"):
        (entry,) = get_email_content([spelling]).emails
        assert entry.stored_email_id == email.pk
        assert entry.content is not None


# --- order and scope ---------------------------------------------------------------


def test_entries_come_back_in_the_order_named(inbox):
    first, second, third = (store(inbox, message(subject=f"s{n}")) for n in range(3))
    unknown = uuid.uuid4()
    result = read(third, str(unknown), first, second)
    assert [e.stored_email_id for e in result.emails] == [third.pk, unknown, first.pk, second.pk]
    assert [e.content.headers.subject if e.content else None for e in result.emails] == [
        "s2",
        None,
        "s0",
        "s1",
    ]


def test_unknown_unserved_hidden_and_unmapped_emails_get_one_answer_53002(account, inbox):
    unserved_account = MailAccountFactory(served=False)
    unserved = store(mapped_folder(unserved_account, "inbox"), message())
    hidden = store(mapped_folder(account, "hr-private", visible_to_tools=False), message())
    unmapped_folder = mapped_folder(account, "gone")
    unmapped = store(unmapped_folder, message())
    unmapped_folder.mapping.delete()  # the folder row stays, its mapping is gone
    served = store(inbox, message())

    result = read(str(uuid.uuid4()), unserved, hidden, unmapped, served)

    failures = [(e.failure.code, e.failure.message) for e in result.emails[:4]]
    assert {code for code, _ in failures} == {53002}
    assert len({text for _, text in failures}) == 1
    assert all(e.content is None for e in result.emails[:4])
    assert result.emails[4].failure is None and result.emails[4].content is not None


def test_junk_folder_email_is_readable_by_id(account):
    junk = mapped_folder(account, "spam", role=FolderRole.JUNK)
    email = store(junk, message(subject="You won"))
    (entry,) = read(email).emails
    assert entry.content.headers.subject == "You won"
    assert entry.content.folder_alias == "spam"


# --- damaged stored copies ------------------------------------------------------------


def test_missing_stored_copy_is_55001_and_requests_one_repair(inbox):
    broken = store(inbox, message())
    fine = store(inbox, message())
    RawMessage.objects.filter(email=broken).delete()

    result = read(broken, fine)
    read(broken)

    assert result.emails[0].failure.code == 55001
    assert result.emails[0].content is None
    assert result.emails[1].content is not None
    assert list(RepairRequest.objects.values_list("email_id", flat=True)) == [broken.pk]


def test_stored_copy_that_does_not_inflate_is_55001_with_repair(inbox):
    email = store(inbox, message())
    RawMessage.objects.filter(email=email).update(compressed=b"not zlib at all")
    assert read(email).emails[0].failure.code == 55001
    assert RepairRequest.objects.filter(email=email).exists()


def test_stored_copy_whose_digest_does_not_match_is_55001_with_repair(inbox):
    email = store(inbox, message("the original"))
    tampered = message("something else").as_bytes()
    RawMessage.objects.filter(email=email).update(
        compressed=zlib.compress(tampered), original_size=len(tampered)
    )
    assert read(email).emails[0].failure.code == 55001
    assert RepairRequest.objects.filter(email=email).exists()


def test_healthy_copy_requests_no_repair(inbox):
    email = store(inbox, message())
    assert read(email).emails[0].content is not None
    assert not RepairRequest.objects.exists()
    assert RawMessage.objects.get(email=email).sha256 == hashlib.sha256(message().as_bytes()).hexdigest()


# --- content ---------------------------------------------------------------------------


def test_headers_flags_and_plain_text_come_back(inbox):
    email = store(inbox, message("Hello Bob,\nsee you."), flags=("\\Seen", "\\Flagged"))
    (entry,) = read(email).emails
    c = entry.content
    assert (c.account_id, c.folder_alias, c.size_bytes) == ("billing", "inbox", email.size_bytes)
    h = c.headers
    assert h.subject == "Quarterly report"
    assert h.message_id == "abc.123@example.org"
    assert h.in_reply_to == "prev@example.org"
    assert h.references == ["root@example.org", "prev@example.org"]
    assert h.sent_at == datetime(2025, 6, 3, 10, 30, tzinfo=UTC)
    assert h.received_at == RECEIVED
    assert (h.from_.address, h.from_.display_name) == ("alice@example.org", "Alice Example")
    assert [(m.address, m.display_name) for m in h.to] == [
        ("bob@example.net", "Bob"),
        ("carol@example.net", None),
    ]
    assert [(m.address, m.display_name) for m in h.cc] == [("dan@example.net", "Dan")]
    assert [m.address for m in h.reply_to] == ["replies@example.org"]
    assert h.bcc == []
    assert c.body.availability == "readable"
    assert c.body.plain_text.text == "Hello Bob,\nsee you."
    assert c.body.plain_text.original_character_count == len("Hello Bob,\nsee you.")
    assert c.body.plain_text.truncated_by == "none"
    assert c.body.sanitized_html is None
    assert c.attachments == []
    assert c.attachment_counts.attachment_count == 0
    assert sorted(c.remote_flags.flags) == ["\\Flagged", "\\Seen"]
    assert c.remote_flags.was_observed is True


def test_wire_shape_is_camel_case_with_from(inbox):
    email = store(inbox, message())
    wire = read(email).wire()
    entry = wire["emails"][0]
    assert entry["storedEmailId"] == str(email.pk)
    assert entry["failure"] is None
    assert set(entry["content"]) == {
        "accountId",
        "folderAlias",
        "sizeBytes",
        "headers",
        "body",
        "attachments",
        "attachmentCounts",
        "remoteFlags",
    }
    assert entry["content"]["headers"]["from"]["address"] == "alice@example.org"
    assert entry["content"]["body"]["plainText"]["truncatedBy"] == "none"


def test_no_result_model_can_hold_bytes():
    seen: set[type] = set()

    def walk(annotation) -> None:
        if annotation is bytes or annotation is bytearray or annotation is memoryview:
            raise AssertionError("a result field can hold bytes")
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            if annotation in seen:
                return
            seen.add(annotation)
            for field in annotation.model_fields.values():
                walk(field.annotation)
        for argument in typing.get_args(annotation):
            walk(argument)

    walk(ContentResult)
    assert content.Attachment in seen and content.Headers in seen


def test_body_over_the_limit_is_cut_and_says_body_character_limit(inbox, mailfathom_settings):
    mailfathom_settings(content_body_character_limit=1000)
    email = store(inbox, message("x" * 1500))
    plain = read(email).emails[0].content.body.plain_text
    assert plain.text == "x" * 1000
    assert plain.original_character_count == 1500
    assert plain.truncated_by == "bodyCharacterLimit"


def test_body_at_the_limit_is_whole(inbox, mailfathom_settings):
    mailfathom_settings(content_body_character_limit=1000)
    email = store(inbox, message("x" * 1000))
    plain = read(email).emails[0].content.body.plain_text
    assert (len(plain.text), plain.truncated_by) == (1000, "none")


def test_budget_is_shared_in_the_order_named(inbox, mailfathom_settings):
    mailfathom_settings(content_body_character_limit=1000, content_read_character_budget=2500)
    emails = [store(inbox, message(ch * 1200)) for ch in "abcd"]
    short = store(inbox, message("tiny"))
    result = read(*emails, short)
    plains = [e.content.body.plain_text for e in result.emails]
    assert [(len(p.text), p.truncated_by) for p in plains] == [
        (1000, "bodyCharacterLimit"),
        (1000, "bodyCharacterLimit"),
        (500, "readCharacterBudget"),
        (0, "readCharacterBudget"),
        (0, "readCharacterBudget"),
    ]
    assert plains[2].text == "c" * 500
    assert all(p.original_character_count == 1200 for p in plains[:4])
    # Naming the last email alone returns it whole.
    assert read(short).emails[0].content.body.plain_text.text == "tiny"


def test_failed_entries_spend_no_budget(inbox, mailfathom_settings):
    mailfathom_settings(content_body_character_limit=1000, content_read_character_budget=1000)
    email = store(inbox, message("y" * 900))
    result = read(str(uuid.uuid4()), email)
    assert result.emails[1].content.body.plain_text.truncated_by == "none"


def html_message() -> EmailMessage:
    msg = message("plain alternative")
    msg.add_alternative(
        "<html><body><p onclick=\"steal()\">Hi <b>Bob</b></p><script>alert('x')</script>"
        '<img src="https://tracker.example/p.gif" onerror="steal()">'
        '<a href="javascript:steal()">bad</a><a href="https://example.org/ok">ok</a></body></html>',
        subtype="html",
    )
    return msg


def test_sanitized_html_has_no_script_and_no_handlers(inbox):
    email = store(inbox, html_message())
    body = read(email, include_html=True).emails[0].content.body
    html = body.sanitized_html.text
    assert "<b>Bob</b>" in html
    assert "https://example.org/ok" in html
    lowered = html.lower()
    for forbidden in ("<script", "alert(", "onclick", "onerror", "javascript:", "tracker.example"):
        assert forbidden not in lowered
    assert body.sanitized_html.truncated_by == "none"
    assert body.plain_text.text == "plain alternative"


def test_sanitized_html_is_omitted_unless_asked(inbox):
    email = store(inbox, html_message())
    assert read(email).emails[0].content.body.sanitized_html is None


def test_sanitized_html_is_null_for_a_message_without_html(inbox):
    email = store(inbox, message())
    assert read(email, include_html=True).emails[0].content.body.sanitized_html is None


def test_html_counts_against_the_budget_and_is_cut_outside_a_tag(inbox, mailfathom_settings):
    mailfathom_settings(content_body_character_limit=1000, content_read_character_budget=1500)
    msg = message("p" * 900)
    msg.add_alternative("<p>" + "<b>word</b> " * 400 + "</p>", subtype="html")
    email = store(inbox, msg)
    body = read(email, include_html=True).emails[0].content.body
    assert body.plain_text.truncated_by == "none"
    assert body.sanitized_html.truncated_by == "readCharacterBudget"
    html = body.sanitized_html.text
    assert len(html) <= 600
    assert html.rfind("<") < html.rfind(">")


# --- availability ------------------------------------------------------------------------


def test_envelope_only_email_has_empty_text_no_attachments_and_null_counts(inbox):
    email = store(inbox, None, withheld=Availability.EXCEEDED_SIZE_LIMIT)
    (entry,) = read(email, include_html=True).emails
    body = entry.content.body
    assert body.availability == "notStoredExceededSizeLimit"
    assert (body.plain_text.text, body.plain_text.truncated_by) == ("", "none")
    assert body.sanitized_html is None
    assert entry.content.attachments == []
    assert entry.content.attachment_counts is None
    assert read(email).wire()["emails"][0]["content"]["attachmentCounts"] is None
    assert not RepairRequest.objects.exists()


def test_email_awaiting_headroom_reads_as_such(inbox):
    email = store(inbox, None, withheld=Availability.AWAITING_STORAGE_HEADROOM)
    body = read(email).emails[0].content.body
    assert (body.availability, body.plain_text.text) == ("notStoredAwaitingStorageHeadroom", "")


def test_encrypted_email_has_empty_text(inbox):
    msg = message("-----BEGIN PGP MESSAGE-----\nhQEMA...\n-----END PGP MESSAGE-----")
    email = store(inbox, msg)
    body = read(email).emails[0].content.body
    assert body.availability == "encryptedNotReadableLocally"
    assert body.plain_text.text == ""


# --- attachments -------------------------------------------------------------------------

PDF = b"%PDF-1.4\n" + bytes(range(256)) * 3


def with_attachments() -> EmailMessage:
    msg = message("see attached")
    msg.add_attachment(PDF, maintype="application", subtype="pdf", filename="report.pdf")
    msg.add_attachment(b"root:x:0:0", maintype="text", subtype="plain", filename="../../etc/passwd")
    msg.add_attachment(
        b"MZ\x90\x00", maintype="application", subtype="octet-stream", filename="invoice\u202efdp.exe"
    )
    msg.add_attachment(b"no name here", maintype="application", subtype="octet-stream")
    return msg


def test_attachments_are_described_with_normalized_names(inbox):
    email = store(inbox, with_attachments())
    c = read(email).emails[0].content
    described = [(a.file_name, a.media_type, a.size_bytes, a.was_file_name_normalized) for a in c.attachments]
    assert described == [
        ("report.pdf", "application/pdf", len(PDF), False),
        ("passwd", "text/plain", len(b"root:x:0:0"), True),
        ("invoicefdp.exe", "application/octet-stream", 4, True),
        (None, "application/octet-stream", len(b"no name here"), False),
    ]
    assert all(a.download_state == "notRequested" and a.download_url is None for a in c.attachments)
    assert c.attachment_counts.attachment_count == 4
    assert c.attachment_counts.total_size_bytes == sum(d[2] for d in described)
    wire = read(email).wire()["emails"][0]["content"]["attachments"][1]
    assert wire["fileName"] == "passwd" and wire["wasFileNameNormalized"] is True

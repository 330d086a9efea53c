"""import_mail judges files by their content: RFC 822 under any name, Outlook .msg, and a report
of what was passed over (counts and kinds, never names)."""

from __future__ import annotations

import os
import re
import zlib
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command

from mailbox.archive import ArchiveReport, read_archive
from mailbox.archive_kinds import judge_prefix, looks_like_message
from mailbox.models import Availability, Email, RawMessage
from mailbox.outlook import CONVERTED_HEADER, outlook_to_mime
from mailbox.parsing import parse_message
from tests.factories import FolderMappingFactory, MailAccountFactory
from tests.mailbox.outlook_msg import OutlookAttachment, OutlookMessage, write_outlook_msg

pytestmark = pytest.mark.django_db

PDF = b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n1 0 obj << /Type /Catalog >> endobj\n"


def _message(n: int, body: str = "Hello.") -> bytes:
    return (
        f"From: Sender {n} <sender{n}@example.org>\r\nTo: alice@example.org\r\n"
        f"Subject: message {n}\r\nMessage-ID: <content-{n}@example.org>\r\n"
        f"Date: Mon, 4 Mar 2024 10:00:00 +0000\r\n\r\n{body}\r\n"
    ).encode()


def _outlook(path: Path, **fields) -> Path:
    defaults = {
        "subject": "Quarterly plan",
        "body": "Hello from Outlook.\r\nSee the plan attached.\r\n",
        "html_body": "<p>Hello from <b>Outlook</b>.</p>",
        "attachments": [
            OutlookAttachment("plan.pdf", PDF, "application/pdf"),
            OutlookAttachment("notes.txt", b"first line\nsecond line\n", "text/plain"),
        ],
    }
    return write_outlook_msg(path, OutlookMessage(**{**defaults, **fields}))


@pytest.fixture
def account():
    account = MailAccountFactory(account_id="content")
    FolderMappingFactory(account=account, alias="archive", remote_name="Archive")
    return account


def _run(account, path: Path) -> str:
    out, err = StringIO(), StringIO()
    call_command(
        "import_mail", "--account", account.account_id, "--folder", "archive", str(path),
        "--no-progress", stdout=out, stderr=err,
    )  # fmt: skip
    assert err.getvalue() == ""
    return out.getvalue()


def _number(pattern: str, output: str) -> int:
    match = re.search(pattern, output)
    assert match, (pattern, output)
    return int(match.group(1))


def _raw(email: Email) -> bytes:
    return zlib.decompress(bytes(RawMessage.objects.get(email=email).compressed))


def _mixed_folder(root: Path) -> Path:
    root.mkdir()
    (root / "one.eml").write_bytes(_message(1))
    (root / "two.msg").write_bytes(_message(2))  # RFC 822 text Outlook users' tools name .msg
    (root / "three").write_bytes(_message(3))  # no extension at all
    (root / "sub").mkdir()
    (root / "sub" / "four.txt").write_bytes(_message(4).replace(b"\r\n", b"\n"))
    _outlook(root / "sub" / "outlook.msg")
    (root / "statement.pdf").write_bytes(PDF)
    (root / "notes.txt").write_bytes(b"Shopping: milk, eggs\nnot a message at all\n")
    (root / "broken.msg").write_bytes(b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + b"\x00" * 600)
    (root / "zero").write_bytes(b"")
    (root / ".DS_Store").write_bytes(b"\x00\x00\x00\x01Bud1")
    (root / "gone").symlink_to(root / "nowhere")
    return root


def test_a_mixed_folder_stores_eml_rfc822_under_any_name_and_outlook_and_reports_the_rest(account, tmp_path):
    root = _mixed_folder(tmp_path / "export")

    output = _run(account, root)

    assert _number(r"Read (\d+) messages", output) == 5
    assert _number(r"(\d+) stored", output) == 5
    assert "Files read: 3 RFC 822 under other names, 1 .eml, 1 Outlook .msg" in output
    assert "6 files passed over: " in output
    passed = output.split("passed over: ", 1)[1].strip().rstrip(".").split(", ")
    assert sorted(passed) == sorted(
        ["1 PDF", "1 text (not mail)", "1 damaged Outlook file", "1 empty", "1 hidden", "1 unreadable"]
    )
    subjects = set(Email.objects.filter(account=account).values_list("subject", flat=True))
    assert subjects == {"message 1", "message 2", "message 3", "message 4", "Quarterly plan"}
    # The files other than the messages are not stored in any form.
    assert Email.objects.filter(account=account).count() == 5

    again = _run(account, root)
    assert _number(r"(\d+) stored", again) == 0 and _number(r"(\d+) already held", again) == 5


def test_the_passed_over_report_counts_exactly(account, tmp_path):
    root = _mixed_folder(tmp_path / "export")
    report = ArchiveReport()

    assert len(list(read_archive(root, report))) == 5

    assert dict(report.read) == {"eml": 1, "message": 3, "outlook": 1}
    assert dict(report.passed_over) == {
        "PDF": 1,
        "text (not mail)": 1,
        "damaged Outlook file": 1,
        "empty": 1,
        "hidden": 1,
        "unreadable": 1,
    }


def test_an_outlook_message_is_stored_with_its_envelope_bodies_and_attachments(account, tmp_path):
    path = _outlook(tmp_path / "plan.msg")

    output = _run(account, path)

    assert "Files read: 1 Outlook .msg." in output and "No file passed over." in output
    email = Email.objects.get(account=account)
    assert email.availability == Availability.AVAILABLE
    assert (email.subject, email.sender_address, email.sender_name) == (
        "Quarterly plan",
        "carol@example.org",
        "Carol Sender",
    )
    assert email.message_id == "outlook-1@example.org"
    assert email.sent_at.isoformat() == "2024-03-05T09:30:00+00:00"
    assert "Hello from Outlook." in email.text_body
    assert email.attachment_count == 2 and email.parse_defects == []
    assert list(email.participants.values_list("role", "address")) == [("to", "alice@example.org")]
    parsed = parse_message(_raw(email))
    assert [(a.file_name, a.media_type, a.size) for a in parsed.attachments] == [
        ("plan.pdf", "application/pdf", len(PDF)),
        ("notes.txt", "text/plain", 23),
    ]
    assert parsed.has_html
    raw = _raw(email)
    assert f"{CONVERTED_HEADER}: outlook-msg".encode() in raw
    assert PDF not in raw  # attachments travel base64-encoded, decoded back exactly by the reader


def test_the_conversion_is_the_same_bytes_every_time(tmp_path):
    data = _outlook(tmp_path / "plan.msg").read_bytes()

    assert outlook_to_mime(data) == outlook_to_mime(data)


def test_saved_transport_headers_are_kept_as_received_without_their_content_fields(tmp_path):
    headers = (
        "Received: from mx.example.org by mail.example.com; Tue, 5 Mar 2024 09:29:58 +0000\r\n"
        "From: Carol Sender <carol@example.org>\r\nTo: Alice <alice@example.org>\r\n"
        "Subject: Quarterly plan (as sent)\r\nDate: Tue, 5 Mar 2024 09:29:00 +0000\r\n"
        "Message-ID: <as-sent@example.org>\r\nMIME-Version: 1.0\r\n"
        'Content-Type: multipart/mixed; boundary="gone"\r\nX-Custom: kept\r\n\r\n'
    )
    data = _outlook(tmp_path / "plan.msg", transport_headers=headers).read_bytes()

    raw = outlook_to_mime(data)

    head = raw.split(b"\r\n\r\n", 1)[0]
    assert head.startswith(b"Received: from mx.example.org by mail.example.com;")
    assert b"X-Custom: kept" in head and b'boundary="gone"' not in raw
    assert head.count(b"Content-Type:") == 1 and head.count(b"MIME-Version:") == 1
    parsed = parse_message(raw)
    assert (parsed.subject, parsed.message_id) == ("Quarterly plan (as sent)", "as-sent@example.org")
    assert len(parsed.attachments) == 2


def test_a_plain_outlook_message_without_attachments_or_html(account, tmp_path):
    path = _outlook(tmp_path / "short.msg", html_body="", attachments=[], subject="Short")

    _run(account, path)

    email = Email.objects.get(account=account)
    assert email.subject == "Short" and email.attachment_count == 0
    assert email.text_body.startswith("Hello from Outlook.")


def test_hostile_attachment_names_in_an_outlook_message_inject_no_header(account, tmp_path):
    hostile = "evil\r\nBcc: victim@example.org\r\n../../etc/passwd\x1b[31m" + "a" * 5000
    path = _outlook(tmp_path / "h.msg", attachments=[OutlookAttachment(hostile, b"data", "text/plain")])

    _run(account, path)

    email = Email.objects.get(account=account)
    raw = _raw(email)
    assert b"\r\nBcc:" not in raw and b"\x1b" not in raw
    assert not email.participants.filter(role="bcc").exists()
    (attachment,) = parse_message(raw).attachments
    assert "/" not in attachment.file_name and len(attachment.file_name) <= 200


def test_hostile_file_names_are_read_and_never_printed(account, tmp_path):
    root = tmp_path / "hostile"
    root.mkdir()
    names = [
        "\x1b[2J\x1b[31mred alert.msg",
        "line\nbreak\rcarriage.eml",
        "bell\x07and\x00".replace("\x00", "") + "tab\t.txt",
        "n" * 250,
        "rtl\u202etxt.exe",
    ]
    for n, name in enumerate(names):
        (root / name).write_bytes(_message(n))
    undecodable = os.fsencode(str(root)) + b"/\xff\xfe-not-utf8"
    with open(undecodable, "wb") as handle:
        handle.write(_message(9))
    with open(os.fsencode(str(root)) + b"/\xc3(pdf", "wb") as handle:
        handle.write(PDF)

    output = _run(account, root)

    assert _number(r"(\d+) stored", output) == 6
    assert "1 file passed over: 1 PDF." in output
    for fragment in (
        "alert",
        "break",
        "carriage",
        "bell",
        "nnnn",
        "rtl",
        "not-utf8",
        "pdf",
        "\x1b",
        "\u202e",
    ):
        assert fragment not in output
    assert all(character.isprintable() or character == "\n" for character in output)


def test_a_single_file_that_is_no_mail_is_passed_over_not_read_as_an_mbox(account, tmp_path):
    path = tmp_path / "statement.dat"
    path.write_bytes(PDF)

    output = _run(account, path)

    assert _number(r"Read (\d+) messages", output) == 0
    assert "1 file passed over: 1 PDF." in output
    assert not Email.objects.filter(account=account).exists()


def test_an_outlook_file_over_the_size_limit_keeps_its_envelope(tmp_path):
    account = MailAccountFactory(account_id="small", max_message_bytes=1024)
    FolderMappingFactory(account=account, alias="archive")
    path = _outlook(tmp_path / "big.msg", attachments=[OutlookAttachment("big.bin", os.urandom(4096))])

    output = _run(account, path)

    assert _number(r"(\d+) over the size limit", output) == 1
    email = Email.objects.get(account=account)
    assert email.availability == Availability.EXCEEDED_SIZE_LIMIT
    assert (email.subject, email.sender_address) == ("Quarterly plan", "carol@example.org")


@pytest.mark.parametrize(
    ("prefix", "expected"),
    [
        (_message(1), (True, "message")),
        (b"Return-Path: <a@example.org>\nX-Thing: y\n\nbody", (True, "message")),
        (b"From someone@example.org Mon Jan  1 00:00:00 2024\n", (True, "mbox")),
        (b"Note: buy milk\nTodo: call\n\n", (False, "text (not mail)")),
        (b"subject line without a colon\n", (False, "text (not mail)")),
        (b" From: starts with a continuation\n", (False, "text (not mail)")),
        (b"\x89PNG\r\n\x1a\n....", (False, "image")),
        (b"PK\x03\x04....", (False, "compressed archive")),
        (b"\x00\x01\x02\x03", (False, "binary")),
        (b"", (False, "empty")),
    ],
)
def test_files_are_judged_by_their_first_bytes(prefix, expected):
    assert judge_prefix(prefix) == expected


def test_a_file_named_eml_is_read_whole_unless_plainly_something_else():
    assert judge_prefix(b"From x Mon Jan  1 00:00:00 2024\nSubject: s\n\nb", named_eml=True) == (True, "eml")
    assert judge_prefix(b"garbled but named so", named_eml=True) == (True, "eml")
    assert judge_prefix(PDF, named_eml=True) == (False, "PDF")


def test_a_header_block_cut_by_the_prefix_still_counts():
    from mailbox.archive_kinds import PREFIX_BYTES

    head = b"Received: x\r\n" + b"X-Long: " + b"v" * PREFIX_BYTES
    assert looks_like_message(head[:PREFIX_BYTES])


def test_an_attached_outlook_message_becomes_a_message_part_with_its_own_attachment(account, tmp_path):
    inner = OutlookMessage(
        subject="Inner note",
        body="Forwarded text.\r\n",
        message_id="<inner@example.org>",
        attachments=[OutlookAttachment("inner.txt", b"inner bytes", "text/plain")],
    )
    attached = OutlookAttachment("Inner note.msg", embedded=inner)
    path = _outlook(tmp_path / "outer.msg", subject="Outer", html_body="", attachments=[attached])

    _run(account, path)

    email = Email.objects.get(account=account)
    raw = _raw(email)
    assert b"Content-Type: message/rfc822" in raw and b"Subject: Inner note" in raw
    assert [a.file_name for a in parse_message(raw).attachments] == ["inner.txt"]
    assert b"text/html" not in raw  # no HTML alternative is made up from the plain text

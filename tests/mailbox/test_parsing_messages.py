"""parse_message, sanitized_html and attachment_bytes on small synthetic messages."""

from __future__ import annotations

import base64
from datetime import UTC, datetime
from email.message import EmailMessage

import pytest

import mailbox.parsing.message as message_module
from mailbox.parsing import (
    Address,
    ParsedMessage,
    ParseLimits,
    attachment_bytes,
    parse_message,
    sanitized_html,
)

PDF = b"%PDF-1.4\n" + bytes(range(256)) * 4
PNG = b"\x89PNG\r\n\x1a\n" + bytes(200)
HEAD = b"From: a@example.org\r\nTo: b@example.org\r\nSubject: s\r\nMIME-Version: 1.0\r\n"


def base(subject: str = "hello") -> EmailMessage:
    msg = EmailMessage()
    msg["From"] = "Alice Example <Alice@Example.ORG>"
    msg["To"] = "Bob <bob@example.net>, carol@EXAMPLE.net"
    msg["Subject"] = subject
    msg["Date"] = "Tue, 03 Jun 2025 12:30:00 +0200"
    msg["Message-ID"] = "<abc.123@example.org>"
    return msg


def html_with_inline_image() -> EmailMessage:
    msg = base()
    msg.set_content("plain version")
    msg.add_alternative('<p>see <img src="cid:logo@example.org"></p>', subtype="html")
    msg.get_payload()[1].add_related(PNG, "image", "png", cid="<logo@example.org>")
    return msg


# --- headers -------------------------------------------------------------------------


def test_headers_become_clean_fields() -> None:
    msg = base("Grüße – naïve café")
    msg["References"] = "<r1@x> <r2@x>"
    msg["In-Reply-To"] = "<r2@x> (message from someone)"
    msg.set_content("body")
    parsed = parse_message(msg.as_bytes())
    assert parsed.subject == "Grüße – naïve café"
    assert parsed.message_id == "abc.123@example.org"
    assert parsed.in_reply_to == "r2@x"
    assert parsed.references == ("r1@x", "r2@x")
    assert parsed.sent_at == datetime(2025, 6, 3, 10, 30, tzinfo=UTC)
    assert parsed.sender == Address(address="Alice@example.org", display_name="Alice Example")
    assert parsed.to == (Address("bob@example.net", "Bob"), Address("carol@example.net", ""))
    assert parsed.defects == ()


def test_encoded_words_split_mid_character_are_joined() -> None:
    first = base64.b64encode(b"caf\xc3")  # "é" is cut between its two UTF-8 bytes
    second = base64.b64encode(b"\xa9!")
    raw = b"Subject: =?utf-8?b?" + first + b"?= =?utf-8?b?" + second + b"?=\r\n\r\nbody"
    assert parse_message(raw).subject == "café!"


def test_subject_loses_control_characters_and_is_bounded() -> None:
    raw = b"Subject: a\x07b\x00c\x1b[31m " + b"x" * 5000 + b"\r\n\r\nbody"
    subject = parse_message(raw).subject
    assert subject.startswith("abc[31m x")
    assert len(subject) == 998


def test_unparseable_date_gives_none_and_zoneless_date_is_utc() -> None:
    assert parse_message(b"Date: someday soon\r\n\r\nx").sent_at is None
    assert parse_message(b"Date: Tue, 03 Jun 2025 12:30:00\r\n\r\nx").sent_at == datetime(
        2025, 6, 3, 12, 30, tzinfo=UTC
    )


def test_unusable_addresses_keep_the_name_with_an_empty_address() -> None:
    parsed = parse_message(b"From: Nobody <not-an-address>\r\nTo: undisclosed-recipients:;\r\n\r\nx")
    assert parsed.sender == Address(address="", display_name="Nobody")
    assert parsed.to == ()


def test_references_are_bounded_keeping_the_root_and_the_latest() -> None:
    refs = " ".join(f"<id{i}@x>" for i in range(500))
    parsed = parse_message(f"References: {refs}\r\n\r\nx".encode())
    assert len(parsed.references) == 100
    assert parsed.references[0] == "id0@x"
    assert parsed.references[-1] == "id499@x"


# --- limits --------------------------------------------------------------------------


def test_addresses_past_the_limit_are_dropped_and_recorded() -> None:
    to = ", ".join(f"u{i}@example.org" for i in range(50))
    parsed = parse_message(f"To: {to}\r\n\r\nx".encode(), ParseLimits(max_addresses=10))
    assert len(parsed.to) == 10
    assert "address-limit" in parsed.defects


def test_nesting_past_the_limit_is_not_split() -> None:
    depth = 8
    body = b"".join(
        b"--b%d\r\nContent-Type: multipart/mixed; boundary=b%d\r\n\r\n" % (i, i + 1) for i in range(depth)
    )
    body += b"--b%d\r\n\r\ndeepest\r\n" % depth + b"".join(
        b"--b%d--\r\n" % i for i in reversed(range(depth + 1))
    )
    raw = HEAD + b"Content-Type: multipart/mixed; boundary=b0\r\n\r\n" + body
    assert parse_message(raw).text_body == "deepest"
    shallow = parse_message(raw, ParseLimits(max_depth=3))
    assert "nesting-limit" in shallow.defects
    assert shallow.text_body == ""


def test_parts_past_the_limit_are_not_walked() -> None:
    parts = b"".join(b"--B\r\nContent-Type: text/plain\r\n\r\npart %d\r\n" % i for i in range(30))
    raw = HEAD + b"Content-Type: multipart/mixed; boundary=B\r\n\r\n" + parts + b"--B--\r\n"
    parsed = parse_message(raw, ParseLimits(max_parts=10))
    assert "part-limit" in parsed.defects
    assert "part 8" in parsed.text_body
    assert "part 9" not in parsed.text_body


def test_headers_past_the_limit_are_dropped() -> None:
    raw = b"".join(b"X-H%d: v\r\n" % i for i in range(100)) + b"Subject: late\r\n\r\nbody"
    parsed = parse_message(raw, ParseLimits(max_headers=50))
    assert "header-limit" in parsed.defects
    assert parsed.subject == ""
    assert parsed.text_body == "body"


def test_an_oversized_header_is_cut() -> None:
    raw = b"Subject: " + b"A" * 100 + b"\r\n " + b"B" * 100 + b"\r\n\r\nbody"
    parsed = parse_message(raw, ParseLimits(max_header_length=150))
    assert "header-too-long" in parsed.defects
    assert parsed.subject.startswith("A" * 100)
    assert len(parsed.subject) < 160


def test_text_is_bounded() -> None:
    msg = base()
    msg.set_content("word " * 10_000)
    parsed = parse_message(msg.as_bytes(), ParseLimits(max_text_chars=1000))
    assert len(parsed.text_body) <= 1000
    assert "text-truncated" in parsed.defects


def test_an_exhausted_time_budget_stops_the_walk_and_is_recorded() -> None:
    raw = html_with_inline_image().as_bytes()
    parsed = parse_message(raw, ParseLimits(max_seconds=0))
    assert "time-limit" in parsed.defects
    assert parsed.subject == "hello"


# --- never raises -------------------------------------------------------------------


@pytest.mark.parametrize(
    "raw",
    [
        b"",
        b"\x00" * 100,
        bytes(range(256)) * 20,
        b"Content-Type: multipart/mixed; boundary=\r\n\r\n--\r\n",
        None,
        "str input",
    ],
)
def test_any_input_gives_a_parsed_message(raw: object) -> None:
    parsed = parse_message(raw)  # type: ignore[arg-type]  # the test feeds what the signature refuses
    assert isinstance(parsed, ParsedMessage)
    assert "\x00" not in parsed.text_body


def test_a_message_that_cannot_be_walked_falls_back_to_its_headers(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken_walk(*_args: object) -> None:
        raise RecursionError("simulated")

    monkeypatch.setattr(message_module, "walk", broken_walk)
    parsed = parse_message(b"Subject: still read\r\nFrom: a@example.org\r\n\r\nbody")
    assert parsed.defects[0] == "unparseable"
    assert parsed.subject == "still read"
    assert parsed.sender == Address("a@example.org", "")


# --- body text and charsets ----------------------------------------------------------


def test_plain_text_is_preferred_in_multipart_alternative() -> None:
    msg = base()
    msg.set_content("the plain words")
    msg.add_alternative("<p>the html words</p>", subtype="html")
    parsed = parse_message(msg.as_bytes())
    assert parsed.text_body == "the plain words"
    assert parsed.has_html is True


def test_html_only_mail_becomes_text_without_tags_script_or_style() -> None:
    msg = base()
    msg.set_content(
        "<html><head><title>T</title><style>.x{color:red}</style></head><body>"
        "<script>alert('x')</script><p>Hello &amp; welcome</p><ul><li>one</li><li>two</li></ul>"
        "</body></html>",
        subtype="html",
    )
    text = parse_message(msg.as_bytes()).text_body
    assert "Hello & welcome" in text
    assert "- one\n- two" in text
    for leaked in ("<", ">", "alert", "color", "T\n"):
        assert leaked not in text


def test_declared_latin1_is_decoded_without_replacement_characters() -> None:
    raw = (
        HEAD
        + b"Content-Type: text/plain; charset=iso-8859-1\r\n\r\nGr\xfc\xdfe, na\xefve caf\xe9 \x93quoted\x94"
    )
    parsed = parse_message(raw)
    assert parsed.text_body == "Grüße, naïve café \u201cquoted\u201d"
    assert parsed.defects == ()


def test_a_wrong_utf8_declaration_falls_back_to_detection() -> None:
    latin = "Der Bär wohnt in München und isst gern Käse, Äpfel und Grünkohl.".encode("cp1252")
    raw = HEAD + b"Content-Type: text/plain; charset=utf-8\r\n\r\n" + latin * 3
    parsed = parse_message(raw)
    assert "\ufffd" not in parsed.text_body
    assert "München" in parsed.text_body
    assert "bad-charset" in parsed.defects


def test_utf7_is_never_decoded_into_markup() -> None:
    raw = HEAD + b'Content-Type: text/plain; charset="utf-7"\r\n\r\n+ADw-script+AD4-alert(1)+ADw-/script+AD4-'
    parsed = parse_message(raw)
    assert "<script" not in parsed.text_body
    assert "bad-charset" in parsed.defects


def test_text_never_holds_nul_or_control_characters() -> None:
    raw = HEAD + b"Content-Type: text/plain\r\n\r\nline\x00one\r\nline\x1btwo\x7f\r\n"
    assert parse_message(raw).text_body == "lineone\nlinetwo"


# --- classification -----------------------------------------------------------------


def test_an_inline_image_referenced_by_cid_is_inline_not_an_attachment() -> None:
    parsed = parse_message(html_with_inline_image().as_bytes())
    assert parsed.inline_count == 1
    assert parsed.attachments == ()


def mixed_html_and_image(html: bytes) -> bytes:
    """Return HTML plus an image with a Content-ID and no disposition, side by side in multipart/mixed."""
    return HEAD + (
        b"Content-Type: multipart/mixed; boundary=M\r\n\r\n"
        b"--M\r\nContent-Type: text/html\r\n\r\n" + html + b"\r\n"
        b"--M\r\nContent-Type: image/png; name=logo.png\r\nContent-ID: <Logo@Example.org>\r\n"
        b"Content-Transfer-Encoding: base64\r\n\r\n" + base64.b64encode(PNG) + b"\r\n--M--\r\n"
    )


def test_only_a_cid_reference_makes_an_undisposed_image_inline() -> None:
    referenced = parse_message(mixed_html_and_image(b'<img src="cid:logo@example.org">'))
    assert (referenced.inline_count, referenced.attachments) == (1, ())
    unreferenced = parse_message(mixed_html_and_image(b"<p>no image here</p>"))
    assert unreferenced.inline_count == 0
    assert [(a.file_name, a.size) for a in unreferenced.attachments] == [("logo.png", len(PNG))]


def test_a_signature_image_in_multipart_related_is_inline_even_unreferenced() -> None:
    msg = base()
    msg.set_content("<p>Regards</p>", subtype="html")
    msg.add_related(PNG, "image", "png", cid="<sig@example.org>", disposition=None)
    del msg.get_payload()[1]["Content-Disposition"]
    parsed = parse_message(msg.as_bytes())
    assert (parsed.inline_count, parsed.attachments) == (1, ())


def test_a_pdf_attachment_is_counted_with_its_decoded_size() -> None:
    msg = base()
    msg.set_content("see attached")
    msg.add_attachment(PDF, maintype="application", subtype="pdf", filename="report.pdf")
    parsed = parse_message(msg.as_bytes())
    assert len(parsed.attachments) == 1
    attachment = parsed.attachments[0]
    assert (attachment.file_name, attachment.media_type, attachment.size) == (
        "report.pdf",
        "application/pdf",
        len(PDF),
    )
    assert attachment.name_was_normalized is False
    assert parsed.attachment_total_size == len(PDF)
    assert parsed.text_body == "see attached"


def test_an_attachment_without_a_name_keeps_an_empty_name() -> None:
    msg = base()
    msg.set_content("x")
    msg.add_attachment(PDF, maintype="application", subtype="octet-stream")
    assert [a.file_name for a in parse_message(msg.as_bytes()).attachments] == [""]


def test_a_hostile_attachment_name_is_normalized() -> None:
    msg = base()
    msg.set_content("x")
    msg.add_attachment(PDF, maintype="application", subtype="pdf", filename="../../etc/passwd")
    attachment = parse_message(msg.as_bytes()).attachments[0]
    assert (attachment.file_name, attachment.name_was_normalized) == ("passwd", True)


def test_winmail_dat_marks_unexpanded_tnef() -> None:
    msg = base()
    msg.set_content("x")
    msg.add_attachment(
        b"\x78\x9f\x3e\x22" + bytes(50),
        maintype="application",
        subtype="octet-stream",
        filename="winmail.dat",
    )
    parsed = parse_message(msg.as_bytes())
    assert parsed.unexpanded_tnef is True
    assert [a.file_name for a in parsed.attachments] == ["winmail.dat"]


def test_multipart_signed_marks_an_unverified_signature_and_hides_the_signature_part() -> None:
    raw = HEAD + (
        b'Content-Type: multipart/signed; protocol="application/pgp-signature"; boundary=S\r\n\r\n'
        b"--S\r\nContent-Type: text/plain\r\n\r\nsigned words\r\n"
        b"--S\r\nContent-Type: application/pgp-signature; name=signature.asc\r\n\r\n"
        b"-----BEGIN PGP SIGNATURE-----\r\nxx\r\n-----END PGP SIGNATURE-----\r\n--S--\r\n"
    )
    parsed = parse_message(raw)
    assert parsed.unverified_signature is True
    assert parsed.encrypted is False
    assert parsed.attachments == ()
    assert parsed.text_body == "signed words"


def test_multipart_encrypted_is_encrypted() -> None:
    raw = HEAD + (
        b'Content-Type: multipart/encrypted; protocol="application/pgp-encrypted"; boundary=E\r\n\r\n'
        b"--E\r\nContent-Type: application/pgp-encrypted\r\n\r\nVersion: 1\r\n"
        b"--E\r\nContent-Type: application/octet-stream\r\n\r\n-----BEGIN PGP MESSAGE-----\r\nxx\r\n--E--\r\n"
    )
    parsed = parse_message(raw)
    assert parsed.encrypted is True
    assert parsed.attachments == ()


@pytest.mark.parametrize("media_type", ["application/pkcs7-mime", "application/x-pkcs7-mime"])
def test_smime_enveloped_data_is_encrypted(media_type: str) -> None:
    raw = HEAD + (
        f"Content-Type: {media_type}; smime-type=enveloped-data; name=smime.p7m\r\n".encode()
        + b"Content-Transfer-Encoding: base64\r\n\r\nMIAGCSqGSIb3DQEHA6CAMIACAQA=\r\n"
    )
    parsed = parse_message(raw)
    assert parsed.encrypted is True
    assert parsed.attachments == ()


def test_smime_signed_data_is_an_unverified_signature_not_encryption() -> None:
    raw = HEAD + b"Content-Type: application/pkcs7-mime; smime-type=signed-data\r\n\r\nxx\r\n"
    parsed = parse_message(raw)
    assert (parsed.unverified_signature, parsed.encrypted) == (True, False)


def test_inline_pgp_is_encrypted() -> None:
    msg = base()
    msg.set_content("-----BEGIN PGP MESSAGE-----\n\nhQEMA\n-----END PGP MESSAGE-----\n")
    assert parse_message(msg.as_bytes()).encrypted is True


def test_an_attached_message_is_one_attachment_and_its_text_stays_out_of_the_body() -> None:
    inner = base("inner")
    inner.set_content("forwarded words")
    outer = base("outer")
    outer.set_content("cover note")
    outer.add_attachment(inner)
    parsed = parse_message(outer.as_bytes())
    assert parsed.text_body == "cover note"
    assert [a.media_type for a in parsed.attachments] == ["message/rfc822"]


# --- sanitized HTML and attachment bytes --------------------------------------------


def test_sanitized_html_drops_scripts_handlers_and_remote_images() -> None:
    msg = base()
    msg.set_content(
        '<p onclick="steal()">Hi <a href="https://example.org/x">link</a></p>'
        '<script>alert(1)</script><img src="https://tracker.example/p.gif" onerror="alert(2)">'
        '<img src="cid:logo@example.org"><a href="javascript:alert(3)">js</a>',
        subtype="html",
    )
    html = sanitized_html(msg.as_bytes())
    assert html is not None
    for removed in ("<script", "alert", "onerror", "onclick", "tracker.example", "javascript:"):
        assert removed not in html
    assert 'src="cid:logo@example.org"' in html
    assert 'rel="noopener noreferrer nofollow"' in html
    assert "https://example.org/x" in html


def test_sanitized_html_is_none_without_an_html_part() -> None:
    msg = base()
    msg.set_content("plain only")
    assert sanitized_html(msg.as_bytes()) is None


def test_sanitized_html_takes_the_html_alternative() -> None:
    html = sanitized_html(html_with_inline_image().as_bytes())
    assert html is not None and "see" in html and "plain version" not in html


def test_attachment_bytes_returns_the_decoded_payload() -> None:
    msg = base()
    msg.set_content("x")
    msg.add_attachment(PDF, maintype="application", subtype="pdf", filename="report.pdf")
    msg.add_attachment(PNG, maintype="image", subtype="png", filename="photo.png")
    raw = msg.as_bytes()
    attachments = parse_message(raw).attachments
    assert [attachment_bytes(raw, a.part_index) for a in attachments] == [PDF, PNG]


@pytest.mark.parametrize("index", [0, -1, 99])
def test_attachment_bytes_is_none_for_containers_and_missing_parts(index: int) -> None:
    msg = base()
    msg.set_content("x")
    msg.add_attachment(PDF, maintype="application", subtype="pdf", filename="report.pdf")
    assert attachment_bytes(msg.as_bytes(), index) is None

"""Sensitive-content scanning: each category, where it applies, the ceiling, and a failing detector."""

from __future__ import annotations

from email.message import EmailMessage

import pytest

from mailbox.models import Email
from mailbox.services import sensitive
from mailbox.services.content import get_email_content
from mailfathom.core.errors import MailFathomError, published
from tests.factories import MailAccountFactory
from tests.mailbox.factories import mapped_folder, stored_email

pytestmark = pytest.mark.django_db

CARD = "4111 1111 1111 1111"
IBAN = "DE89 3704 0044 0532 0130 00"
PHONE = "(202) 555-0143"
SSN = "536-90-4399"
IDNR = "36 574 261 809"
DNI = "12345678Z"


def message(
    body: str, subject: str = "Hello", html: str | None = None, to: str = "bob@example.net"
) -> EmailMessage:
    msg = EmailMessage()
    msg["From"] = f"Card {CARD} <alice@example.org>"
    msg["To"] = to
    msg["Subject"] = subject
    msg.set_content(body)
    if html is not None:
        msg.add_alternative(html, subtype="html")
    return msg


@pytest.fixture
def inbox():
    return mapped_folder(MailAccountFactory(), "inbox")


@pytest.fixture
def scanning(mailfathom_settings):
    mailfathom_settings(sensitive_scan_enabled=True)


def content_of(email: Email, **kwargs):
    return get_email_content([str(email.pk)], **kwargs).emails[0].content


# --- detectors ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "category"),
    [
        (f"card {CARD} ok", "card"),
        ("card 4111-1111-1111-1111 ok", "card"),
        ("card 378282246310005 ok", "card"),  # 15-digit Amex
        (f"ref 12 {CARD}", "card"),  # a card inside a longer grouped run
        (f"iban {IBAN} ok", "iban"),
        ("iban GB82WEST12345698765432.", "iban"),
        (f"call {PHONE} now", "phone"),
        ("call +44 20 7946 0958 now", "phone"),
        (f"ssn {SSN} ok", "nationalId"),
        (f"IdNr {IDNR} ok", "nationalId"),
        (f"DNI {DNI} ok", "nationalId"),
        ("NIE X1234567L ok", "nationalId"),
    ],
)
def test_each_category_is_replaced_by_its_marker(text, category):
    redacted = sensitive.redact(text)
    assert f"[redacted:{category}]" in redacted
    assert not any(ch.isdigit() for ch in redacted.replace("12 [redacted", ""))


@pytest.mark.parametrize(
    "text",
    [
        "meeting on 2024-05-06 at 10:30",
        "order 12345 shipped",
        "4111 1111 1111 1112 fails Luhn",
        "DE89 3704 0044 0532 0130 01 fails mod 97",
        "ssn 078-05-1120 is a known invalid one",
        "version 1.2.3 build 456",
    ],
)
def test_lookalikes_that_fail_validation_stay(text):
    assert sensitive.redact(text) == text


def test_a_number_split_across_html_elements_is_found():
    scanned = sensitive.scan_html(f'<p>card <b>4111</b> 1111 1111 1111 &amp; <a href="tel:{PHONE}">x</a></p>')
    assert scanned.text == '<p>card <b>[redacted:card]</b> &amp; <a href="tel:[redacted:phone]">x</a></p>'
    assert scanned.withheld is False


def test_html_text_is_reescaped_after_redaction():
    scanned = sensitive.scan_html("<p>&lt;script&gt;alert(1)&lt;/script&gt; 536-90-4399</p>")
    assert scanned.text == "<p>&lt;script&gt;alert(1)&lt;/script&gt; [redacted:nationalId]</p>"


# --- through get_email_content --------------------------------------------------------------


def test_scanning_is_off_by_default(inbox):
    email = stored_email(inbox, message(f"pay with {CARD}", subject=f"IBAN {IBAN}"))
    c = content_of(email)
    assert CARD in c.body.plain_text.text
    assert c.headers.subject == f"IBAN {IBAN}"
    assert c.headers.from_.display_name == f"Card {CARD}"


def test_body_subject_html_and_display_names_are_redacted(inbox, scanning):
    body = f"card {CARD}\niban {IBAN}\nphone {PHONE}\nssn {SSN}"
    email = stored_email(inbox, message(body, subject=f"call {PHONE}", html=f"<p>IdNr <i>{IDNR}</i></p>"))
    c = content_of(email, include_html=True)
    assert c.body.plain_text.text == (
        "card [redacted:card]\niban [redacted:iban]\nphone [redacted:phone]\nssn [redacted:nationalId]"
    )
    assert c.body.plain_text.original_character_count == len(body)
    assert c.body.plain_text.truncated_by == "none"
    assert "[redacted:nationalId]" in c.body.sanitized_html.text and "574" not in c.body.sanitized_html.text
    assert c.headers.subject == "call [redacted:phone]"
    assert c.headers.from_.display_name == "Card [redacted:card]"


def test_addresses_are_never_redacted(inbox, scanning):
    email = stored_email(inbox, message("hi", to="4111111111111111@example.net"))
    assert content_of(email).headers.to[0].address == "4111111111111111@example.net"


def test_names_past_the_fortieth_are_withheld_when_scanning(inbox, mailfathom_settings):
    recipients = ", ".join(f"Person {n} <p{n}@example.net>" for n in range(45))
    email = stored_email(inbox, message("hi", to=recipients))
    names = [m.display_name for m in content_of(email).headers.to]
    assert names[-1] == "Person 44"  # off: every name is published
    mailfathom_settings(sensitive_scan_enabled=True)
    to = content_of(email).headers.to
    # The sender's name is the first of the forty, so 39 recipients keep theirs.
    assert [m.display_name for m in to[:39]] == [f"Person {n}" for n in range(39)]
    assert all(m.display_name is None for m in to[39:])
    assert [m.address for m in to] == [f"p{n}@example.net" for n in range(45)]


def test_body_past_the_ceiling_is_withheld_and_says_so(inbox, mailfathom_settings):
    mailfathom_settings(sensitive_scan_enabled=True, sensitive_scan_ceiling=1000)
    email = stored_email(inbox, message("w" * 1500))
    plain = content_of(email).body.plain_text
    assert plain.truncated_by == "sensitiveContentScanCeiling"
    assert plain.original_character_count == 1500
    assert plain.text == "w" * (1000 - sensitive.CEILING_MARGIN)


def test_body_at_the_ceiling_is_whole(inbox, mailfathom_settings):
    mailfathom_settings(sensitive_scan_enabled=True, sensitive_scan_ceiling=1000)
    email = stored_email(inbox, message("w" * 1000))
    plain = content_of(email).body.plain_text
    assert (len(plain.text), plain.truncated_by) == (1000, "none")


def test_a_number_straddling_the_ceiling_is_not_served_in_part(inbox, mailfathom_settings):
    mailfathom_settings(sensitive_scan_enabled=True, sensitive_scan_ceiling=1000)
    email = stored_email(inbox, message("w" * 990 + " " + CARD + " tail"))
    text = content_of(email).body.plain_text.text
    assert not any(ch.isdigit() for ch in text)


def test_a_number_just_before_the_cut_is_redacted_whole(inbox, mailfathom_settings):
    mailfathom_settings(sensitive_scan_enabled=True, sensitive_scan_ceiling=1000)
    email = stored_email(inbox, message("w" * 930 + " " + CARD + " " + "w" * 600))
    text = content_of(email).body.plain_text.text
    assert text.endswith(" [redacted:card]")


def test_the_body_limit_wins_when_it_cuts_more(inbox, mailfathom_settings):
    mailfathom_settings(
        sensitive_scan_enabled=True, sensitive_scan_ceiling=5000, content_body_character_limit=1000
    )
    email = stored_email(inbox, message("w" * 6000))
    plain = content_of(email).body.plain_text
    assert (len(plain.text), plain.truncated_by) == (1000, "bodyCharacterLimit")


def test_a_cut_never_splits_a_marker(inbox, mailfathom_settings):
    mailfathom_settings(sensitive_scan_enabled=True, content_body_character_limit=1000)
    email = stored_email(inbox, message("w" * 990 + " " + CARD + " " + "w" * 50))
    text = content_of(email).body.plain_text.text
    assert text == "w" * 990 + " "


def test_html_past_the_ceiling_is_withheld(inbox, mailfathom_settings):
    mailfathom_settings(sensitive_scan_enabled=True, sensitive_scan_ceiling=1000)
    email = stored_email(inbox, message("plain", html="<p>" + "<b>word</b> " * 200 + "</p>"))
    html = content_of(email, include_html=True).body.sanitized_html
    assert html.truncated_by == "sensitiveContentScanCeiling"
    assert len(html.text) <= 1000
    assert html.text.rfind("<") < html.text.rfind(">")


def test_a_failing_detector_fails_the_whole_call(inbox, scanning, monkeypatch):
    # Patched at our own seam, sensitive.DETECTORS, never inside phonenumbers or stdnum.
    def broken(text: str):
        raise RuntimeError("detector crashed")

    monkeypatch.setattr(sensitive, "DETECTORS", (*sensitive.DETECTORS, ("phone", broken)))
    email = stored_email(inbox, message("nothing sensitive"))
    with pytest.raises(MailFathomError) as caught:
        get_email_content([str(email.pk)])
    assert caught.value.code == 82001
    assert published(caught.value).code == 54001


def test_a_failing_detector_is_harmless_while_scanning_is_off(inbox, monkeypatch):
    def broken(text: str):
        raise RuntimeError("detector crashed")

    monkeypatch.setattr(sensitive, "DETECTORS", (("phone", broken),))
    email = stored_email(inbox, message("nothing sensitive"))
    assert content_of(email).body.plain_text.text == "nothing sensitive"

"""The reply a draft becomes: threading headers, recipients, subject, body encoding."""

from __future__ import annotations

import email
from datetime import UTC, datetime
from email import policy

import pytest

from answering.drafting.compose import (
    compose_reply,
    is_version_of,
    mint_message_id,
    reply_references,
    reply_sender,
    reply_subject,
)
from tests.answering.drafts_support import DraftFactory
from tests.factories import MailAccountFactory
from tests.mailbox.factories import EmailFactory

pytestmark = pytest.mark.django_db

NOW = datetime(2026, 12, 1, 9, 30, tzinfo=UTC)


def _parsed(draft, message_id="x.000000000000@example.org"):
    return email.message_from_bytes(compose_reply(draft, message_id, now=NOW), policy=policy.default)


def test_references_over_32_keep_the_first_and_the_latest_31_ending_with_the_answered_message():
    chain = [f"m{n}@example.org" for n in range(40)]
    answered = EmailFactory(message_id="answered@example.org", references=chain)

    refs = reply_references(answered)

    assert len(refs) == 32
    assert refs[0] == "m0@example.org"
    assert refs[1:] == chain[-30:] + ["answered@example.org"]


def test_references_without_a_references_header_start_from_in_reply_to():
    answered = EmailFactory(message_id="<b@example.org>", in_reply_to="a@example.org", references=[])

    assert reply_references(answered) == ["a@example.org", "b@example.org"]


def test_references_drop_repeats_and_blanks():
    answered = EmailFactory(message_id="c@x", references=["a@x", "", "a@x", "c@x"])

    assert reply_references(answered) == ["a@x", "c@x"]


@pytest.mark.parametrize(
    ("subject", "expected"),
    [
        ("Order 4711", "Re: Order 4711"),
        ("Re: Order 4711", "Re: Order 4711"),
        ("RE:Order", "RE:Order"),
        ("AW: Bestellung", "AW: Bestellung"),
        ("Reply needed", "Re: Reply needed"),
        ("", "Re:"),
        ("two\r\nlines", "Re: two lines"),
    ],
)
def test_the_subject_gets_one_reply_prefix(subject, expected):
    assert reply_subject(subject) == expected


def test_to_is_the_sender_when_there_is_no_reply_to_and_from_is_the_account_address():
    account = MailAccountFactory(username="shop@shop.example", display_name="The Shop")
    answered = EmailFactory(account=account, sender_name="Bea Buyer", sender_address="bea@customer.example")
    message = _parsed(DraftFactory(email=answered))

    assert [(a.display_name, a.addr_spec) for a in message["To"].addresses] == [
        ("Bea Buyer", "bea@customer.example")
    ]
    assert [(a.display_name, a.addr_spec) for a in message["From"].addresses] == [
        ("The Shop", "shop@shop.example")
    ]
    assert message["Date"].datetime == NOW
    assert message["Message-ID"] == "<x.000000000000@example.org>"


def test_from_falls_back_to_the_address_the_mail_was_sent_to_when_the_user_name_is_no_address():
    account = MailAccountFactory(username="shop")
    answered = EmailFactory(account=account, to=[("Shop desk", "desk@shop.example")])
    draft = DraftFactory(email=answered)

    assert reply_sender(draft).addr_spec == "desk@shop.example"
    assert mint_message_id(draft, reply_sender(draft)).endswith("@shop.example")


def test_without_any_usable_address_there_is_no_from_and_the_id_uses_a_reserved_domain():
    account = MailAccountFactory(username="shop")
    answered = EmailFactory(account=account, sender_address="not an address")
    draft = DraftFactory(email=answered)
    message = _parsed(draft)

    assert message["From"] is None and message["To"] is None
    assert mint_message_id(draft, None).endswith("@mailfathom.invalid")


def test_a_minted_id_names_its_draft_and_differs_each_time():
    draft = DraftFactory()
    first, second = mint_message_id(draft, None), mint_message_id(draft, None)

    assert first != second and is_version_of(draft, first) and is_version_of(draft, second)
    assert not is_version_of(draft, f"{draft.id}@example.org")
    assert not is_version_of(DraftFactory(), first)


def test_the_body_is_utf8_text_plain_with_crlf_and_long_lines_encoded():
    draft = DraftFactory(body="Grüße\n" + "x" * 1200 + "\nEnde")
    raw = compose_reply(draft, "x.000000000000@example.org", now=NOW)
    message = email.message_from_bytes(raw, policy=policy.default)

    assert message.get_content_type() == "text/plain" and message.get_content_charset() == "utf-8"
    assert message["Content-Transfer-Encoding"] == "quoted-printable"
    assert all(len(line) <= 998 for line in raw.split(b"\r\n"))
    assert b"\n" not in raw.replace(b"\r\n", b"")
    assert message.get_content().replace("\r\n", "\n") == "Grüße\n" + "x" * 1200 + "\nEnde\n"

"""is_bulk: header signals and whole sender local parts, never substrings."""

from __future__ import annotations

from email.message import EmailMessage

import pytest

from mailbox.parsing import (
    DEFAULT_BULK_LOCAL_PARTS,
    Address,
    BulkHeaders,
    ParsedMessage,
    is_bulk,
    is_list_mail,
    parse_message,
)


def message(sender: str = "alice@example.org", **bulk: object) -> ParsedMessage:
    return ParsedMessage(sender=Address(address=sender, display_name=""), bulk_headers=BulkHeaders(**bulk))


def test_a_personal_message_is_not_bulk() -> None:
    assert is_bulk(message()) is False


@pytest.mark.parametrize("value", ["auto-generated", "auto-replied", "Auto-Notified; owner-email=x@y", "yes"])
def test_any_auto_submitted_value_but_no_is_bulk(value: str) -> None:
    assert is_bulk(message(auto_submitted=value)) is True


@pytest.mark.parametrize("value", ["no", "No", " NO ; reason=manual", ""])
def test_auto_submitted_no_is_not_bulk(value: str) -> None:
    assert is_bulk(message(auto_submitted=value)) is False


def test_a_list_id_makes_bulk() -> None:
    assert is_bulk(message(has_list_id=True)) is True


def test_a_list_unsubscribe_makes_bulk() -> None:
    assert is_bulk(message(has_list_unsubscribe=True)) is True


@pytest.mark.parametrize("value", ["bulk", "List", "JUNK", "junk (spam)"])
def test_precedence_bulk_list_or_junk_is_bulk(value: str) -> None:
    assert is_bulk(message(precedence=value)) is True


@pytest.mark.parametrize("value", ["first-class", "special-delivery", "bulky"])
def test_other_precedence_values_are_not_bulk(value: str) -> None:
    assert is_bulk(message(precedence=value)) is False


@pytest.mark.parametrize("sender", ["noreply@x.example", "No-Reply@x.example", "MAILER-DAEMON@x.example"])
def test_a_known_automatic_local_part_is_bulk(sender: str) -> None:
    assert is_bulk(message(sender=sender)) is True


@pytest.mark.parametrize(
    "sender", ["reply@x.example", "newsletter-team@x.example", "mynoreply@x.example", "bob@noreply.example"]
)
def test_a_local_part_is_compared_whole_never_as_a_substring(sender: str) -> None:
    assert is_bulk(message(sender=sender)) is False


def test_the_local_parts_can_be_replaced() -> None:
    assert is_bulk(message(sender="alerts@x.example"), frozenset({"Alerts"})) is True
    assert is_bulk(message(sender="noreply@x.example"), frozenset({"alerts"})) is False


def test_the_default_local_parts_are_the_documented_ones() -> None:
    assert {"noreply", "no-reply", "mailer-daemon", "postmaster", "bounces"} <= DEFAULT_BULK_LOCAL_PARTS
    assert "reply" not in DEFAULT_BULK_LOCAL_PARTS


def test_a_message_without_sender_is_judged_on_headers_only() -> None:
    assert is_bulk(ParsedMessage()) is False
    assert is_bulk(ParsedMessage(bulk_headers=BulkHeaders(has_list_id=True))) is True


def test_parsed_list_headers_make_a_parsed_message_bulk() -> None:
    msg = EmailMessage()
    msg["From"] = "Team <team@lists.example>"
    msg["Subject"] = "digest"
    msg["List-Id"] = "<dev.lists.example>"
    msg.set_content("hello")
    assert is_bulk(parse_message(msg.as_bytes())) is True
    del msg["List-Id"]
    assert is_bulk(parse_message(msg.as_bytes())) is False


@pytest.mark.parametrize(
    ("bulk", "listed"),
    [
        ({"has_list_id": True}, True),
        ({"precedence": "list"}, True),
        ({"precedence": "List (mailman)"}, True),
        ({"precedence": "bulk"}, False),  # automatic senders say bulk too
        ({"has_list_unsubscribe": True}, False),  # transactional mail carries it as well
        ({"auto_submitted": "auto-generated"}, False),
        ({}, False),
    ],
)
def test_list_mail_is_what_a_mailing_list_delivered(bulk: dict, listed: bool) -> None:
    assert is_list_mail(message(**bulk)) is listed


def test_a_noreply_sender_is_bulk_but_not_list_mail() -> None:
    automatic = message("noreply@shop.example")
    assert is_bulk(automatic) is True and is_list_mail(automatic) is False

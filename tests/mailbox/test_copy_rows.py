"""copy_rows and copy_values write what the ORM's INSERT would: awkward text, arrays, NULLs, bytes, keys."""

from __future__ import annotations

import zlib
from datetime import UTC, datetime

import pytest

from mailbox.models import Email, Participant, ParticipantRole, RawMessage
from mailbox.services.copy_rows import copy_rows, copy_values
from tests.mailbox.factories import FolderFactory

pytestmark = pytest.mark.django_db

# Every character COPY's text format treats specially, and some it does not.
AWKWARD = "tab\there, newline\nthere, CR\r, backslash \\ and \\N, quote \" and ' , {braces}, comma, ü 😀"


def _email(folder, uid: int, **fields) -> Email:
    values = {
        "account": folder.account,
        "folder": folder,
        "uidvalidity": 1,
        "uid": uid,
        "received_at": datetime(2024, 5, 1, 12, 0, tzinfo=UTC),
        "size_bytes": 10,
    }
    return Email(**(values | fields))


def test_values_round_trip_as_an_insert_stores_them():
    folder = FolderFactory()
    awkward = _email(
        folder,
        1,
        subject=AWKWARD,
        text_body=AWKWARD * 3,
        references=["<a@x>", 'has "quotes", commas and {braces}', "back\\slash", ""],
        flags=["\\Seen", "$Label"],
        parse_defects=[],
        sent_at=None,
        thread_id=None,
        participants_text=AWKWARD,
    )
    plain = _email(folder, 2, subject="plain", sent_at=datetime(2024, 4, 30, tzinfo=UTC))

    assert copy_rows(Email, [awkward, plain]) == 2

    stored = Email.objects.get(pk=awkward.pk)
    assert stored.subject == AWKWARD
    assert stored.text_body == AWKWARD * 3
    assert stored.references == ["<a@x>", 'has "quotes", commas and {braces}', "back\\slash", ""]
    assert stored.flags == ["\\Seen", "$Label"]
    assert stored.parse_defects == []
    assert stored.sent_at is None and stored.thread_id is None
    assert Email.objects.get(pk=plain.pk).sent_at == datetime(2024, 4, 30, tzinfo=UTC)
    # Generated columns are the database's own: the lexical index reads the copied text.
    assert Email.objects.filter(pk=awkward.pk, search_vector__isnull=False).exists()
    assert Email.objects.get(pk=plain.pk).search_length > 0


def test_bytes_and_a_key_the_database_assigns():
    folder = FolderFactory()
    email = _email(folder, 1, subject="with parts")
    copy_rows(Email, [email])
    raw = b"Subject: x\r\n\r\n\x00\xff\\N\t binary"
    compressed = zlib.compress(raw)
    copy_rows(
        RawMessage,
        [
            RawMessage(
                email=email, compressed=compressed, sha256="0" * 64, original_size=len(raw), stored_size=9
            )
        ],
    )
    people = [
        Participant(email=email, role=ParticipantRole.TO, position=i, address=f"p{i}@example.com")
        for i in range(3)
    ]
    assert copy_rows(Participant, people) == 3

    assert zlib.decompress(bytes(RawMessage.objects.get(email=email).compressed)) == raw
    stored = list(Participant.objects.filter(email=email).order_by("position"))
    assert [p.address for p in stored] == ["p0@example.com", "p1@example.com", "p2@example.com"]
    assert len({p.pk for p in stored}) == 3 and all(p.pk for p in stored)


def test_nothing_to_write():
    assert copy_rows(Email, []) == 0


def test_plain_values_are_written_as_the_instances_would_be():
    folder = FolderFactory()
    email = _email(folder, 1, subject="values")
    copy_rows(Email, [email])
    raw = b"Subject: y\r\n\r\n\x00\xff\\N binary"
    compressed = zlib.compress(raw)
    fields = ("email_id", "compressed", "sha256", "original_size", "stored_size")
    assert copy_values(RawMessage, fields, [(email.pk, compressed, "1" * 64, len(raw), len(compressed))]) == 1
    people = [(email.pk, ParticipantRole.CC, i, f"q{i}@example.com", AWKWARD) for i in range(2)]
    names = ("email_id", "role", "position", "address", "display_name")
    assert copy_values(Participant, names, people) == 2

    assert zlib.decompress(bytes(RawMessage.objects.get(email=email).compressed)) == raw
    stored = list(Participant.objects.filter(email=email).order_by("position"))
    assert [(p.role, p.address, p.display_name) for p in stored] == [
        (ParticipantRole.CC, "q0@example.com", AWKWARD),
        (ParticipantRole.CC, "q1@example.com", AWKWARD),
    ]
    assert all(p.pk for p in stored)


def test_values_of_a_field_that_needs_preparing_are_refused():
    with pytest.raises(ValueError, match="received_at"):
        copy_values(Email, ("uid", "received_at"), [(1, "2024-05-01")])

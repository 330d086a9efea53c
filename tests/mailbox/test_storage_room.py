"""The storage ceiling is read cheaply while far away and exactly when near (StorageRoom)."""

from __future__ import annotations

import os
import zlib

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from accounts.models import MailAccount
from mailbox.models import Availability, Email
from mailbox.services.store import (
    COMPRESSION_LEVEL,
    IncomingMessage,
    raw_bytes_at_most,
    store_messages,
    stored_bytes,
)
from tests.factories import MailAccountFactory
from tests.mailbox.factories import mapped_folder

pytestmark = pytest.mark.django_db


def _message(n: int, body: bytes = b"") -> IncomingMessage:
    raw = (
        f"From: a@example.org\r\nTo: b@example.org\r\nSubject: room {n}\r\n"
        f"Message-ID: <room-{n}@example.org>\r\n\r\n"
    ).encode() + (body or f"body {n}\r\n".encode())
    return IncomingMessage(uidvalidity=1, uid=n, size=len(raw), received_at=None, raw=raw)


def _sums(queries) -> int:
    return sum('SUM("mailbox_rawmessage"."stored_size")' in q["sql"] for q in queries)


def test_far_below_the_ceiling_no_batch_sums_the_account():
    folder = mapped_folder(MailAccountFactory(), "inbox")  # the default ceiling, 20 GiB

    with CaptureQueriesContext(connection) as queries:
        result = store_messages(folder, [_message(n) for n in range(1, 6)], advance_to_uid=5)

    assert result.stored == 5 and result.awaiting_headroom == 0
    assert _sums(queries.captured_queries) == 0


def test_near_the_ceiling_the_exact_total_decides():
    # Another account's content makes the table large, so the cheap bound says "no room";
    # the exact total of this account, which holds nothing yet, says there is.
    other = mapped_folder(MailAccountFactory(), "inbox")
    incompressible = os.urandom(300_000)
    store_messages(other, [_message(1, incompressible)], advance_to_uid=1)
    folder = mapped_folder(MailAccountFactory(), "inbox")
    fits = _message(1, os.urandom(20_000))
    needed = len(zlib.compress(fits.raw, COMPRESSION_LEVEL))
    MailAccount.objects.filter(pk=folder.account_id).update(storage_ceiling_bytes=needed + 1000)
    folder.refresh_from_db()
    assert raw_bytes_at_most() > needed + 1000  # the bound alone would refuse it

    with CaptureQueriesContext(connection) as queries:
        result = store_messages(folder, [fits, _message(2, os.urandom(20_000))], advance_to_uid=2)

    assert _sums(queries.captured_queries) == 1  # read once, then counted down
    assert result.stored == 2 and result.awaiting_headroom == 1  # the first fits, the second does not
    assert stored_bytes(folder.account_id) == needed
    held_back = Email.objects.get(account_id=folder.account_id, uid=2)
    assert held_back.availability == Availability.AWAITING_STORAGE_HEADROOM

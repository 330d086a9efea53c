"""MIME fuzzing, bounded: mutated messages never break the parser, and store + read back agree.

Mutants come from small seed messages built in tests/mailbox/fuzzing.py (byte flips,
truncation, boundary and header damage, deep nesting, splices), with a fixed seed so a
failure repeats. The long run over the shared corpus is bench/fuzz.py (`make fuzz`); speed
is measured there, never asserted here.
"""

from __future__ import annotations

import pytest

from accounts.models import FolderRole
from mailbox.parsing import ParsedMessage, attachment_bytes, parse_message, sanitized_html
from mailbox.services.content import get_email_content, parse_limits
from mailbox.services.store import IncomingMessage, store_messages
from tests.configure import configure
from tests.factories import MailAccountFactory
from tests.mailbox.factories import mapped_folder
from tests.mailbox.fuzzing import mutated, read_back_mismatches, seed_messages

SEED = 20261201
PARSED_MUTANTS = 400
STORED_MUTANTS = 120


def test_mutated_messages_never_make_the_parser_raise_or_fall_back():
    seeds = seed_messages()
    for index, (mutations, raw) in enumerate(mutated(seeds, PARSED_MUTANTS, SEED)):
        parsed = parse_message(raw)
        # parse_message swallows an exception of its own walk and says "unparseable": the
        # fuzzer wants to know the walk itself survived.
        assert isinstance(parsed, ParsedMessage), (index, mutations)
        assert "unparseable" not in parsed.defects, (index, mutations)
        assert "\x00" not in parsed.text_body and "\x00" not in parsed.subject, (index, mutations)
        sanitized_html(raw)
        for attachment in parsed.attachments:
            attachment_bytes(raw, attachment.part_index)


@pytest.mark.django_db
def test_stored_mutants_read_back_as_the_parser_produced_them(settings):
    configure(settings, sensitive_scan_enabled=False)
    account = MailAccountFactory(account_id="fuzz", storage_ceiling_bytes=10**11)
    folder = mapped_folder(account, "inbox", FolderRole.INBOX)
    mutants = [raw for _mutations, raw in mutated(seed_messages(), STORED_MUTANTS, SEED + 1)]
    stored = store_messages(
        folder,
        [
            IncomingMessage(uidvalidity=1, uid=uid, size=len(raw), received_at=None, raw=raw)
            for uid, raw in enumerate(mutants, start=1)
        ],
    )
    assert stored.stored == len(mutants)

    limits = parse_limits()
    for start in range(0, len(mutants), 10):
        ids = [str(email_id) for email_id in stored.email_ids[start : start + 10]]
        entries = get_email_content(ids).emails
        for offset, entry in enumerate(entries):
            assert read_back_mismatches(entry, mutants[start + offset], limits) == [], start + offset
    # The comparison can fail: the same entry against another message differs.
    other = b"Subject: another message\r\nMessage-ID: <other@example.org>\r\n\r\nanother body\r\n"
    assert read_back_mismatches(entries[0], other, limits) != []

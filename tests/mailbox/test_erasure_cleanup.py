"""After an erasure and the product's clean-up, neither a dump of the database nor the files of
the affected tables (heap, TOAST and indexes, read from the embedded server's data directory)
hold the erased address.

Deleting rows only marks them dead: before the clean-up their bytes are still in the files. The
clean-up (audit.services.erasure.clean_up_after_erasure, the same the task and `manage.py
erasure_cleanup` run) rewrites the tables, checkpoints and switches the WAL.
"""

from __future__ import annotations

import uuid
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command
from django.db import connection
from django.utils import timezone

from accounts.models import FolderRole
from audit.erasure_models import ErasureRequesterKind, ErasureRequestRecord
from audit.services.erasure import (
    Requester,
    clean_up_after_erasure,
    execute_erasure_request,
    request_erasure,
    verify_statement,
)
from mailbox.models import AttachmentText, Email
from mailbox.services.erasure import affected_tables
from mailbox.services.lexical_search import refresh_term_stats
from tests.factories import MailAccountFactory
from tests.mailbox.erasure_data import message
from tests.mailbox.factories import mapped_folder
from tests.mailbox.factories import stored_email as store
from tests.mailbox.test_erasure_sync import database_text

pytestmark = pytest.mark.django_db(transaction=True)

ALICE = Requester(name="alice", kind=ErasureRequesterKind.USER, person="alice")
BOB = Requester(name="bob", kind=ErasureRequesterKind.USER, person="bob")


def relation_files(tables: list[str]) -> list[Path]:
    """Every file of `tables`: the heap, its TOAST table and TOAST index, every index, all forks
    and segments."""
    with connection.cursor() as cursor:
        cursor.execute("SHOW data_directory")
        (data_directory,) = cursor.fetchone()
        cursor.execute(
            """
            WITH wanted AS (SELECT c.oid, c.reltoastrelid FROM pg_class c WHERE c.oid = ANY(%s::regclass[]))
            SELECT pg_relation_filepath(oid) FROM wanted
            UNION SELECT pg_relation_filepath(reltoastrelid) FROM wanted WHERE reltoastrelid <> 0
            UNION SELECT pg_relation_filepath(i.indexrelid) FROM pg_index i
                JOIN wanted w ON i.indrelid = w.oid OR i.indrelid = w.reltoastrelid
            """,
            [tables],
        )
        paths = [row[0] for row in cursor.fetchall() if row[0]]
    files = []
    for relative in paths:
        base = Path(data_directory) / relative
        for candidate in base.parent.glob(base.name + "*"):
            suffix = candidate.name[len(base.name) :]
            if suffix == "" or suffix in ("_fsm", "_vm", "_init") or suffix.lstrip(".").isdigit():
                files.append(candidate)
    return files


def files_text(tables: list[str]) -> bytes:
    with connection.cursor() as cursor:
        cursor.execute("CHECKPOINT")  # what the buffers hold, on disk
    return b"".join(path.read_bytes() for path in relation_files(tables)).lower()


@pytest.fixture
def planted():
    """A unique address in headers, bodies, participants, attachment text and word statistics."""
    local = f"wren{uuid.uuid4().hex[:12]}"
    address = f"{local}@example.org"
    inbox = mapped_folder(MailAccountFactory(account_id="billing"), "inbox", FolderRole.INBOX)
    mine = [store(inbox, message(role, n, person=address)) for n, role in enumerate(("From", "To", "Cc"))]
    Email.objects.filter(pk=mine[0].pk).update(
        text_body=f"Write to {address} about the invoice.", attachment_text=f"Signed by {address}"
    )
    AttachmentText.objects.create(
        email=mine[0],
        part_index=2,
        outcome="ok",
        characters=30,
        extracted_at=timezone.now(),
        engine_version=1,
    )
    store(inbox, message("", 9))
    refresh_term_stats()
    return address


def test_after_the_clean_up_neither_a_dump_nor_the_table_files_hold_the_erased_address(planted):
    address = planted.encode()
    tables = affected_tables()
    assert {"mailbox_email", "mailbox_participant", "mailbox_rawmessage", "mailbox_passage"} <= set(tables)
    assert {"mailbox_attachmenttext", "mailbox_lexicaltermstat", "audit_answeringrunemail"} <= set(tables)
    assert address in files_text(tables)  # the files can show it: the test can fail

    requested = request_erasure([planted], requester=ALICE)
    execute_erasure_request(requested.request_id, [planted], requester=BOB)
    assert address not in database_text()  # gone from SQL at once

    steps = clean_up_after_erasure()

    assert [step.outcome for step in steps] == ["done"] * len(steps), steps
    assert {step.step for step in steps} >= {"CHECKPOINT", "SELECT pg_switch_wal()"}
    assert address not in files_text(tables)
    assert address not in database_text()
    assert b"digest" not in address and b"plain" in database_text()  # the rest of the mail is there
    record = ErasureRequestRecord.objects.get()
    assert record.cleanup_completed_at is not None and len(record.cleanup_steps) == len(steps)
    assert record.statement_document["cleanup"]["completed_at"] is not None
    assert verify_statement(
        record.statement_document, record.statement_signature, record.statement_public_key
    )


def test_the_clean_up_runs_as_a_command_and_refuses_to_run_inside_a_transaction(planted):
    from django.db import transaction

    with pytest.raises(RuntimeError, match="transaction"), transaction.atomic():
        clean_up_after_erasure()

    out = StringIO()
    call_command("erasure_cleanup", stdout=out)

    assert 'VACUUM (FULL, ANALYZE) "mailbox_email"' in out.getvalue() and "Clean-up done." in out.getvalue()

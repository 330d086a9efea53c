"""Erasure over real mail: vendored corpus messages with the person planted in them.

Two messages written by real mail clients (tests/data/corpus/, SpamAssassin public corpus)
get the person as their sender, the token in the subject, in the text part and as an
attachment's name; they are synchronized from Dovecot and embedded (so passages hold them
too). After the erasure a dump of the whole test database holds neither the address nor the
token, and the next synchronization stores none of the erased messages again.
"""

from __future__ import annotations

import email
import uuid
from email import policy
from pathlib import Path

import pytest

from mailbox.models import Email
from mailbox.services.embedding import embed_pending
from mailbox.services.erasure import erasure_request, execute_erasure
from mailbox.services.lexical_search import refresh_term_stats
from mailbox.sync.engine import synchronize_account
from tests.configure import configure, scripted_embeddings
from tests.mailbox.imap_support import account_for, add_user
from tests.mailbox.test_erasure_sync import PERSON, TOKEN, database_text
from tests.support import isolated_provider_health

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.dovecot]

CORPUS = Path(__file__).resolve().parents[1] / "data" / "corpus"


def planted(path: Path) -> bytes:
    """The vendored message with the person as sender and the token in four places."""
    message = email.message_from_bytes(path.read_bytes(), policy=policy.default)
    message.replace_header("From", f"Quill Marsh <{PERSON}>")
    message.replace_header("Subject", f"{message['Subject']} {TOKEN}")
    del message["Message-ID"]
    message["Message-ID"] = f"<corpus-{uuid.uuid4().hex}@example.net>"
    text = message.get_body(preferencelist=("plain",))
    text.set_content(f"{text.get_content()}\nWritten about {TOKEN} by {PERSON}.\n")
    if message.get_content_type() == "multipart/mixed":
        message.add_attachment(b"notes", maintype="text", subtype="plain", filename=f"{TOKEN}.txt")
    return message.as_bytes()


@pytest.fixture
def user(dovecot):
    return add_user(dovecot)


def test_real_mail_with_the_person_planted_leaves_nothing_after_erasure(settings, scripted, user):
    messages = [planted(path) for path in sorted(CORPUS.glob("*.eml"))]
    assert len(messages) == 2
    user.append("INBOX", messages)
    account = account_for(user)
    synchronize_account(account.pk)
    with isolated_provider_health(settings, "erasure-corpus"):
        configure(settings, **scripted_embeddings(scripted, embedding_max_retries=0))
        embed_pending()
    refresh_term_stats()
    assert Email.objects.count() == 2
    text = database_text()
    assert PERSON.encode() in text and TOKEN.encode() in text  # the dump can show them

    result = execute_erasure(erasure_request([PERSON]))

    assert result.total("emails") == 2 and Email.objects.count() == 0
    text = database_text()
    assert PERSON.encode() not in text and TOKEN.encode() not in text
    again = synchronize_account(account.pk, force=True)
    assert Email.objects.count() == 0, again

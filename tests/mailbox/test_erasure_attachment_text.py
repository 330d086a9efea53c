"""Erasure reaches what was read from attachments: words only a file held leave the database.

The person's message carries a Word document whose phrase appears nowhere else; the
document is zip-compressed inside base64, so before extraction no dump shows the phrase.
Extraction puts it into the email's attachment text, the lexical index and the word
snapshot; after the erasure a dump of the whole test database (tests/mailbox/
test_erasure_sync.database_text, raw MIME inflated) holds none of it.
"""

from __future__ import annotations

import io
import uuid
from email.message import EmailMessage

import docx
import pytest

from mailbox.models import AttachmentText, Email
from mailbox.services import attachment_text
from mailbox.services.erasure import erasure_request, execute_erasure
from mailbox.services.lexical_search import rank_lexical, refresh_term_stats
from mailbox.services.store import IncomingMessage, store_messages
from tests.factories import MailAccountFactory
from tests.mailbox.factories import mapped_folder
from tests.mailbox.test_erasure_sync import PERSON, database_text

pytestmark = pytest.mark.django_db(transaction=True)

PHRASE = "Zeltbahnprüfung Quorvenstadt"  # her own words, only inside the document
WORDS = ("zeltbahnprüfung", "quorvenstadt")


def _document() -> bytes:
    document = docx.Document()
    document.add_paragraph(f"Gutachten zur {PHRASE}, erstellt im Auftrag von Frau Marsh.")
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()


def _message(n: int, *, from_person: bool) -> bytes:
    msg = EmailMessage()
    msg["From"] = f"Quill Marsh <{PERSON}>" if from_person else "colleague@example.net"
    msg["To"] = "office@example.com"
    msg["Subject"] = f"Report {n}"
    msg["Message-ID"] = f"<att-{n}-{uuid.uuid4().hex}@example.net>"
    msg.set_content("Please see the attached document.")
    if from_person:
        msg.add_attachment(
            _document(),
            maintype="application",
            subtype="vnd.openxmlformats-officedocument.wordprocessingml.document",
            filename="gutachten.docx",
        )
    return msg.as_bytes()


def test_words_found_only_in_an_attachment_are_gone_from_the_dump_after_erasure():
    folder = mapped_folder(MailAccountFactory(account_id="office"), "inbox")
    raws = [_message(1, from_person=True), _message(2, from_person=False)]
    store_messages(
        folder,
        [
            IncomingMessage(uidvalidity=1, uid=n, size=len(raw), received_at=None, raw=raw)
            for n, raw in enumerate(raws, 1)
        ],
    )
    before_extraction = database_text().lower()
    assert not any(word.encode() in before_extraction for word in WORDS)  # the file hides them

    assert attachment_text.extract_pending().outcomes == {"ok": 1}
    refresh_term_stats()
    dump = database_text().lower()
    assert all(word.encode() in dump for word in WORDS)  # extraction put them there
    (hit,) = rank_lexical(Email.objects.all(), "Quorvenstadt", 5)
    assert hit.in_attachment

    result = execute_erasure(erasure_request([PERSON]))

    assert result.total("emails") == 1 and result.total("attachment_texts") == 1
    assert not AttachmentText.objects.exists() and Email.objects.count() == 1
    dump = database_text().lower()
    assert not any(word.encode() in dump for word in WORDS)
    assert PERSON.encode() not in dump

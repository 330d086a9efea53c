"""The mail the erasure tests erase: one person named in each header, a word only they hold.

Shared by the mailbox, audit and browser tests of erasure, holds and case exports.
"""

from __future__ import annotations

import uuid
from email.message import EmailMessage

from mailbox.models import AttachmentText, Email, Participant, Passage, RawMessage, RepairRequest

PERSON = "Dana.Subject@Example.ORG"
TOKEN = "zyqvoxtrelkin"  # a word no other message holds
MODELS = (Email, RawMessage, Participant, Passage, RepairRequest, AttachmentText)


def message(role: str, n: int, *, person: str = PERSON, attachment: bool = False) -> bytes:
    """A message naming `person` in header `role` ("" for none), with TOKEN in the body."""
    msg = EmailMessage()
    msg["From"] = person if role == "From" else f"other{n}@example.net"
    msg["To"] = person if role == "To" else "team@example.com"
    for header in ("Cc", "Bcc", "Reply-To"):
        if role == header:
            msg[header] = person
    msg["Subject"] = f"note {n} {TOKEN if role else 'plain'}"
    msg["Message-ID"] = f"<erasure-{n}-{uuid.uuid4().hex}@example.net>"
    msg["Date"] = f"Mon, {n + 1} Jun 2025 10:00:00 +0000"
    msg.set_content(f"Body {n} mentions {TOKEN if role else 'nothing'}.")
    if attachment:
        msg.add_attachment(b"%PDF-1.4 data", maintype="application", subtype="pdf", filename=f"{TOKEN}.pdf")
    return msg.as_bytes()


def row_counts() -> dict[str, int]:
    return {model.__name__: model.objects.count() for model in MODELS}

"""Bulk is decided when mail is stored, by import as by synchronization, with the configured list.

The parser's rules are tested in test_parsing_bulk.py; here the deployment's
MAILFATHOM_BULK_SENDER_LOCAL_PARTS reaches the rows (the drafting gate reads Email.is_bulk).
"""

from __future__ import annotations

import pytest

from mailbox.models import Email
from mailbox.services.importer import import_archive
from tests.factories import FolderMappingFactory, MailAccountFactory

pytestmark = pytest.mark.django_db


def _eml(sender: str, n: int, **headers: str) -> bytes:
    lines = [
        f"From: {sender}",
        "To: shop@example.org",
        f"Subject: case {n}",
        f"Message-ID: <case-{n}@example.org>",
    ]
    lines += [f"{name.replace('_', '-')}: {value}" for name, value in headers.items()]
    return ("\r\n".join(lines) + "\r\n\r\nbody\r\n").encode()


CASES = {
    # subject: (raw, bulk?)
    "case 1": (_eml("alerts@shop.example", 1), True),  # a configured local part
    "case 2": (_eml("noreply@shop.example", 2), False),  # a default one, replaced by the setting
    "case 3": (_eml("alerts-team@shop.example", 3), False),  # never a substring
    "case 4": (_eml("anna@example.org", 4, Auto_Submitted="no"), False),
    "case 5": (_eml("anna@example.org", 5, Auto_Submitted="auto-replied"), True),
    "case 6": (_eml("anna@example.org", 6, Precedence="list"), True),
    "case 7": (_eml("anna@example.org", 7, List_Id="<news.example.org>"), True),
    "case 8": (_eml("anna@example.org", 8, List_Unsubscribe="<mailto:u@example.org>"), True),
    "case 9": (_eml("Alerts@shop.example", 9), True),  # without regard to case
}


def test_import_applies_every_bulk_signal_and_the_configured_local_parts(tmp_path, mailfathom_settings):
    mailfathom_settings(bulk_sender_local_parts="alerts, bulletin")
    account = MailAccountFactory()
    FolderMappingFactory(account=account, alias="inbox", remote_name="INBOX")
    archive = tmp_path / "mail"
    archive.mkdir()
    for n, (raw, _) in enumerate(CASES.values()):
        (archive / f"{n}.eml").write_bytes(raw)

    import_archive(account.account_id, "inbox", archive)

    stored = dict(Email.objects.filter(account=account).values_list("subject", "is_bulk"))
    assert stored == {subject: bulk for subject, (_, bulk) in CASES.items()}
    listed = set(Email.objects.filter(account=account, is_list_mail=True).values_list("subject", flat=True))
    assert listed == {"case 6", "case 7"}  # Precedence: list and List-Id, nothing else

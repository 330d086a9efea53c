"""Deleting stored mail is recorded: an account deleted in admin, a folder reset by synchronization.

docs/operations/compliance.md lists account_mail_deleted and folder_mail_deleted among the
mutation trail's kinds; these hold that each is written, with counts and who did it, under
an account whose trail is on. The folder reset runs against a real Dovecot whose folder is
given a new UIDVALIDITY, which voids every UID held.
"""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.urls import reverse

from accounts.models import MailAccount
from audit.models import MutationEntry, MutationKind
from mailbox.models import Email
from mailbox.sync.engine import synchronize_account
from tests.factories import MailAccountFactory
from tests.mailbox.imap_support import account_for, add_user

pytestmark = pytest.mark.django_db(transaction=True)


def _message(n: int) -> bytes:
    return (
        f"From: Sender {n} <sender{n}@example.org>\r\nTo: alice@example.org\r\nSubject: message {n}\r\n"
        f"Message-ID: <reset{n}@example.org>\r\nDate: Mon, 2 Nov 2026 10:00:00 +0000\r\n\r\nhello\r\n"
    ).encode()


def test_deleting_an_account_in_admin_is_recorded_with_who_and_what_went(client):
    account = MailAccountFactory(account_id="leaving", mutation_audit_enabled=True)
    operator = User.objects.create_superuser("operator", password="not-used")
    client.force_login(operator)

    response = client.post(reverse("admin:accounts_mailaccount_delete", args=[account.pk]), {"post": "yes"})

    assert response.status_code == 302 and not MailAccount.objects.filter(pk=account.pk).exists()
    (entry,) = MutationEntry.objects.filter(kind=MutationKind.ACCOUNT_MAIL_DELETED)
    assert (entry.account_identifier, entry.requester, entry.requester_kind) == (
        "leaving",
        "operator",
        "user",
    )
    assert entry.account_id is None  # the record outlives the account it names
    assert entry.counts == {"emails": 0, "folders": 0}


@pytest.mark.dovecot
def test_a_folder_reset_by_a_new_uidvalidity_is_recorded_with_the_emails_it_dropped(dovecot):
    user = add_user(dovecot)
    user.append("INBOX", [_message(n) for n in range(3)])
    account = account_for(user)
    MailAccount.objects.filter(pk=account.pk).update(mutation_audit_enabled=True)
    synchronize_account(account.pk)
    assert Email.objects.filter(account=account).count() == 3
    old = user.uidvalidity("INBOX")
    user.doveadm("mailbox", "update", "-u", user.name, "--uid-validity", str(old + 1000), "INBOX")

    synchronize_account(account.pk, force=True)

    (entry,) = MutationEntry.objects.filter(kind=MutationKind.FOLDER_MAIL_DELETED)
    assert (entry.folder_alias, entry.requester_kind, entry.counts) == ("inbox", "task", {"emails": 3})
    assert entry.account_identifier == account.account_id

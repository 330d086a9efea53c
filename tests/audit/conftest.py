"""Audit tests: the API's rate counts reset. They also use answering's fixtures (the scripted
server as chat and embedding endpoint) and the MCP servers' (a real uvicorn reached with the
real `mcp` client), which tests/conftest.py registers for the whole suite."""

from __future__ import annotations

import pytest

from accounts.models import FolderRole, MailAccount
from audit.api.throttling import forget_counts
from tests.audit.support import SECOND_ADDRESS
from tests.factories import MailAccountFactory
from tests.mailbox.erasure_data import message
from tests.mailbox.factories import mapped_folder
from tests.mailbox.factories import stored_email as store


@pytest.fixture
def fresh_rate_counts():
    """The API's rate counts in Redis start and end empty (they outlive a test's database)."""
    forget_counts()
    yield
    forget_counts()


@pytest.fixture
def two_accounts():
    """billing: the person in From, To and Cc, plus one unrelated; support: one To, with the trail on."""
    billing = mapped_folder(MailAccountFactory(account_id="billing"), "inbox", FolderRole.INBOX)
    support = mapped_folder(MailAccountFactory(account_id="support"), "inbox", FolderRole.INBOX)
    MailAccount.objects.update(mutation_audit_enabled=True)
    for n, role in enumerate(("From", "To", "Cc")):
        store(billing, message(role, n, attachment=n == 0))
    store(billing, message("", 9))
    store(support, message("To", 20, person=SECOND_ADDRESS))
    return billing, support

"""Audit tests: the API's rate counts reset. They also use answering's fixtures (the scripted
server as chat and embedding endpoint) and the MCP servers' (a real uvicorn reached with the
real `mcp` client), which tests/conftest.py registers for the whole suite."""

from __future__ import annotations

import importlib

import pytest

from accounts.models import FolderRole, MailAccount
from audit.api.throttling import forget_counts
from tests.audit.support import SECOND_ADDRESS
from tests.factories import MailAccountFactory
from tests.mailbox.factories import mapped_folder
from tests.mailbox.test_erasure import message, store

# The migrations that give the Compliance group its permissions, and their granting steps.
_GROUP_STEPS = (
    ("audit.migrations.0004_compliance_group", "create_group"),
    ("audit.migrations.0007_legal_holds", "grant_compliance"),
    ("audit.migrations.0008_access_trail", "grant_view"),
    ("audit.migrations.0011_case_exports", "grant"),
    ("audit.migrations.0012_compliance_group_views", "grant"),
)


@pytest.fixture(autouse=True)
def _compliance_group(request):
    """The Compliance group as the migrations leave it, in every database test of this folder.

    A test with transaction=True ends by flushing the database, which takes the rows data
    migrations wrote (the group) with it; the next test on that worker would find no group.
    The migrations' own steps are run again, with today's models in place of historical ones.
    """
    if request.node.get_closest_marker("django_db") is None:
        yield
        return
    request.getfixturevalue("_django_db_helper")  # database access as the marker asks
    from django.apps import apps
    from django.contrib.auth.models import Group

    granted = Group.objects.filter(name="Compliance", permissions__codename="view_erasurerequestrecord")
    if not granted.exists():
        for module, step in _GROUP_STEPS:
            getattr(importlib.import_module(module), step)(apps, None)
    yield


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

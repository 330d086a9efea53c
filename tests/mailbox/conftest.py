"""Fixtures the mailbox tests share; a module that needs another inbox defines its own."""

from __future__ import annotations

import pytest

from accounts.models import FolderRole
from tests.factories import MailAccountFactory
from tests.mailbox.factories import mapped_folder


@pytest.fixture
def inbox():
    """The inbox (role INBOX) of one account, "team": where a test's mail lands."""
    return mapped_folder(
        MailAccountFactory(account_id="team", display_name="Team"), "inbox", FolderRole.INBOX
    )

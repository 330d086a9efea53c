"""The access trail, left by tool calls over /mcp with the real client against a real uvicorn.

Each call under an account whose trail is on leaves one entry naming the tool, the key (or
the OAuth client and the person who consented) and the emails the result handed over, in
the order it handed them; an account whose trail is off gets nothing.
"""

from __future__ import annotations

from typing import Any

import pytest

from accounts.models import FolderRole, MailAccount
from audit.access_models import AccessEntry
from mailbox.services.lexical_search import refresh_term_stats
from tests.factories import MailAccountFactory
from tests.mailbox.factories import EmailFactory, mapped_folder, plain_message
from tests.mcp.conftest import call_tool, payload, with_client

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def mail(db) -> dict[str, Any]:
    """Two accounts: billing (trail on) and archive (trail off), each with a claim email."""
    billing = MailAccountFactory(account_id="billing", display_name="Billing", access_trail_enabled=True)
    archive = MailAccountFactory(account_id="archive", display_name="Archive")
    emails = {}
    for account in (billing, archive):
        inbox = mapped_folder(account, "inbox", FolderRole.INBOX)
        body = "The insurer agreed to pay the repair costs."
        emails[account.account_id] = EmailFactory(
            folder=inbox,
            subject="Insurance claim settled",
            body=body,
            raw=plain_message("Insurance claim settled", body),
        )
        EmailFactory(folder=inbox, subject="Lunch on Friday", body="Shall we meet at noon?")
    refresh_term_stats()
    return {"billing": billing, "archive": archive, "emails": emails}


def _entries() -> list[tuple[str, str, str, str, str, list[str]]]:
    return [
        (
            entry.account_identifier,
            entry.action,
            entry.requester_kind,
            entry.requester,
            entry.owner,
            [str(row.email_id) for row in entry.emails.order_by("position")],
        )
        for entry in AccessEntry.objects.order_by("id")
    ]


def test_every_tool_call_leaves_an_entry_naming_the_key_and_the_returned_emails(mcp_server, api_key, mail):
    claim = str(mail["emails"]["billing"].pk)

    async def action(client):
        return {
            "accounts": await client.call_tool("list_accounts", {}),
            "list": await client.call_tool("list_emails", {"accounts": ["billing"]}),
            "search": await client.call_tool(
                "search_emails", {"queryText": "insurer", "accounts": ["billing"]}
            ),
            "read": await client.call_tool("get_email_content", {"storedEmailIds": [claim]}),
        }

    results = {case: payload(result) for case, result in with_client(mcp_server.url, api_key, action).items()}

    listed = [summary["storedEmailId"] for summary in results["list"]["emails"]]
    found = [match["summary"]["storedEmailId"] for match in results["search"]["matches"]]
    assert len(listed) == 2 and found == [claim]
    assert _entries() == [
        ("billing", "list_accounts", "mcp_key", "tests", "", []),
        ("billing", "list_emails", "mcp_key", "tests", "", listed),
        ("billing", "search_emails", "mcp_key", "tests", "", found),
        ("billing", "get_email_content", "mcp_key", "tests", "", [claim]),
    ]
    for entry in AccessEntry.objects.all():
        assert entry.channel == "mcp"
        assert entry.email_count == entry.emails.count()
        assert entry.account_id == mail["billing"].pk
        assert entry.retention_days == mail["billing"].access_trail_retention_days


def test_an_account_with_the_trail_off_gets_no_entry(mcp_server, api_key, mail):
    archived = str(mail["emails"]["archive"].pk)

    result = payload(call_tool(mcp_server, api_key, "get_email_content", {"storedEmailIds": [archived]}))
    assert result["emails"][0]["content"] is not None
    payload(
        call_tool(mcp_server, api_key, "search_emails", {"queryText": "insurer", "accounts": ["archive"]})
    )

    assert AccessEntry.objects.count() == 0


def test_with_every_trail_off_no_call_leaves_an_entry(mcp_server, api_key, mail):
    MailAccount.objects.update(access_trail_enabled=False)

    payload(call_tool(mcp_server, api_key, "search_emails", {"queryText": "insurer"}))
    payload(call_tool(mcp_server, api_key, "list_emails", {}))

    assert AccessEntry.objects.count() == 0


def test_a_search_over_both_accounts_records_only_the_one_with_the_trail_on(mcp_server, api_key, mail):
    result = payload(call_tool(mcp_server, api_key, "search_emails", {"queryText": "insurer"}))

    found = {match["summary"]["accountId"]: match["summary"]["storedEmailId"] for match in result["matches"]}
    assert set(found) == {"billing", "archive"}
    assert _entries() == [("billing", "search_emails", "mcp_key", "tests", "", [found["billing"]])]


def test_a_refused_call_hands_over_no_mail_and_leaves_no_entry(mcp_server, api_key, mail):
    result = call_tool(mcp_server, api_key, "list_emails", {"accounts": ["billing"], "pageSize": 0})

    assert result.is_error
    assert AccessEntry.objects.count() == 0


@pytest.fixture(scope="module")
def oauth_server(module_server_factory):
    return module_server_factory(MAILFATHOM_MCP_AUTH="oauth+api-key")


def test_an_oauth_token_is_named_by_its_client_and_the_person_who_consented(oauth_server, mail):
    from tests.mcp.oauth_support import issue_token, person_owning

    alice = person_owning("billing", username="alice")
    access, _, client = issue_token(alice, ["billing"], oauth_server.url)

    result = payload(call_tool(oauth_server, access, "list_emails", {}))

    listed = [summary["storedEmailId"] for summary in result["emails"]]
    assert _entries() == [("billing", "list_emails", "oauth_token", client.client_name, "alice", listed)]
    assert AccessEntry.objects.get().client_name == client.client_name

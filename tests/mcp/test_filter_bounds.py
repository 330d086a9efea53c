"""A filter's bounds are the same on every path that takes one: one parser, one sentence.

MCP list_emails and search_emails (through /mcp with the real client) and ask_mail's
search_mail (parse_lookup, what a run does with the model's arguments) refuse the same
values with the same code and the same sentence, and accept the same values at the bound.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from accounts.models import FolderRole
from answering.lookup import LookupRefused, parse_lookup
from mailbox.services.mail_filter import MAX_TIMESTAMP_LENGTH
from mailfathom.core.text import MAX_ADDRESS_LENGTH
from tests.factories import MailAccountFactory
from tests.mailbox.factories import mapped_folder
from tests.mcp.conftest import error_text, with_client

pytestmark = pytest.mark.django_db(transaction=True)

# Long fractions of a second parse (Python keeps six digits), so only the length bound can
# refuse these: at the bound they are accepted, one character over they are not.
TIMESTAMP_AT_BOUND = "2024-05-01T09:30:00." + "1" * 38 + "+00:00"
TIMESTAMP_OVER_BOUND = "2024-05-01T09:30:00." + "1" * 39 + "+00:00"
DOMAIN = "@example.com"
ADDRESS_AT_BOUND = "a" * (MAX_ADDRESS_LENGTH - len(DOMAIN)) + DOMAIN
ADDRESS_OVER_BOUND = "a" + ADDRESS_AT_BOUND

VALUES = {
    "receivedOnOrAfter": (TIMESTAMP_AT_BOUND, TIMESTAMP_OVER_BOUND),
    "receivedBefore": (TIMESTAMP_AT_BOUND, TIMESTAMP_OVER_BOUND),
    "senderAddress": (ADDRESS_AT_BOUND, ADDRESS_OVER_BOUND),
    "recipientAddress": (ADDRESS_AT_BOUND, ADDRESS_OVER_BOUND),
}
TOOLS = {"list_emails": {}, "search_emails": {"queryText": "insurer"}}


def test_the_values_sit_exactly_at_and_one_past_each_bound():
    assert len(TIMESTAMP_AT_BOUND) == MAX_TIMESTAMP_LENGTH == 64
    assert len(TIMESTAMP_OVER_BOUND) == 65
    assert len(ADDRESS_AT_BOUND) == MAX_ADDRESS_LENGTH == 320
    assert len(ADDRESS_OVER_BOUND) == 321


def _lookup(argument: str, value: str) -> str | None:
    """What a run's search_mail says to the model: None when accepted, else the refusal."""
    try:
        parse_lookup(json.dumps({"queryText": "insurer", argument: value}))
    except LookupRefused as refusal:
        assert refusal.argument == argument
        return f"MailFathom error {refusal.code}: {refusal.message}"
    return None


def _mcp(server, key: str) -> dict[tuple[str, str, int], Any]:
    calls = {
        (tool, argument, index): (tool, {**base, argument: values[index]})
        for tool, base in TOOLS.items()
        for argument, values in VALUES.items()
        for index in (0, 1)
    }

    async def action(client):
        return {case: await client.call_tool(name, arguments) for case, (name, arguments) in calls.items()}

    return with_client(server.url, key, action)


def test_every_path_accepts_the_bound_and_refuses_one_past_it_with_one_sentence(mcp_server, api_key):
    account = MailAccountFactory(account_id="billing", display_name="Shared Billing")
    mapped_folder(account, "inbox", FolderRole.INBOX)

    results = _mcp(mcp_server, api_key)

    for argument, (at_bound, over_bound) in VALUES.items():
        refusal = _lookup(argument, over_bound)
        assert refusal is not None and refusal.startswith("MailFathom error 51002: The "), argument
        assert argument in refusal
        assert _lookup(argument, at_bound) is None, argument
        for tool in TOOLS:
            assert not results[(tool, argument, 0)].is_error, (tool, argument)
            assert results[(tool, argument, 1)].is_error, (tool, argument)
            assert error_text(results[(tool, argument, 1)]) == refusal, (tool, argument)

"""search_emails over /mcp with the real client: a selection that reads nothing is an empty result.

The folders a caller names may leave nothing to read (an alias matching nothing, a folder
hidden from tools, the junk role without includeJunkMail); list_emails answers with an
empty page, and search_emails answers with no matches rather than 54001.
"""

from __future__ import annotations

import pytest

from tests.mailbox.test_empty_scope import shared_billing
from tests.mcp.conftest import with_client

pytestmark = pytest.mark.django_db(transaction=True)

EMPTY_FOLDERS = {
    "alias-matching-nothing": ["no-such-folder"],
    "hidden-folder": ["private"],
    "junk-role-without-include-junk": ["role:junk"],
}


@pytest.fixture
def billing(db) -> None:
    shared_billing()


def test_search_emails_over_folders_that_read_nothing_is_an_empty_result_not_54001(
    mcp_server, api_key, billing
):
    async def action(client):
        results = {}
        for case, folders in EMPTY_FOLDERS.items():
            arguments = {"accounts": ["billing"], "folders": folders}
            listed = await client.call_tool("list_emails", arguments)
            searched = await client.call_tool("search_emails", {**arguments, "queryText": "insurer payment"})
            results[case] = (listed, searched)
        return results

    logged_before = len(mcp_server.log())  # the server is shared by the session
    results = with_client(mcp_server.url, api_key, action)
    logged = mcp_server.log()[logged_before:]

    for case, (listed, searched) in results.items():
        assert not listed.is_error and listed.structured_content["emails"] == [], case
        assert not searched.is_error, (case, searched.content[0].text)
        found = searched.structured_content
        assert found["matches"] == [], case
        assert (found["retrievalMode"], found["semanticSearch"]) == ("lexical", "inactive"), case
        assert found["includedJunkMail"] is False, case
    assert "code=54001" not in logged and "EmptyResultSet" not in logged

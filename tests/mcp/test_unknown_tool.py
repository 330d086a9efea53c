"""A call naming a tool this server does not publish: the protocol's invalid-params error.

It is the caller's mistake, so it is counted as refused (not as a failure of the server),
and the name it carried is caller text: neither the log nor the instruments repeat it,
however much it looks like one of ours.
"""

from __future__ import annotations

import pytest
from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_PARAMS

from mailfathom.mcp import calls
from mailfathom.mcp.server import UNKNOWN_TOOL_MESSAGE
from tests.mcp.conftest import call_tool

pytestmark = pytest.mark.django_db(transaction=True)

# Spelled exactly like a MailFathom tool, so only "is it published" can keep it out of the log.
PLAUSIBLE = "list_emails_deleted"
HOSTILE = "list_emails\n2031-01-01 INFO forged log line <script>alert(1)</script>"


@pytest.mark.parametrize("name", [PLAUSIBLE, HOSTILE], ids=["plausible", "hostile"])
def test_an_unknown_tool_is_refused_with_invalid_params_naming_no_name(mcp_server, api_key, name):
    with pytest.raises(MCPError) as refused:
        call_tool(mcp_server, api_key, name)

    assert refused.value.code == INVALID_PARAMS
    assert refused.value.message == UNKNOWN_TOOL_MESSAGE
    assert name not in str(refused.value) and "forged" not in str(refused.value)


def test_an_unknown_tool_is_logged_as_a_refusal_under_the_placeholder(mcp_server, api_key):
    before = mcp_server.log()
    with pytest.raises(MCPError):
        call_tool(mcp_server, api_key, PLAUSIBLE)

    added = mcp_server.log()[len(before) :]
    assert f"mcp call tool={calls.PLACEHOLDER} outcome=refused code={INVALID_PARAMS}" in added
    assert PLAUSIBLE not in added
    assert "outcome=failed" not in added and "54001" not in added

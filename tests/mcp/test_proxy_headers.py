"""Posture none behind a reverse proxy: a forwarded request is refused, whatever socket it used.

A proxy on the same machine connects over loopback, so without this every client it
forwards would be served without a key (docs/operations/mcp-endpoint.md, Postures).
"""

from __future__ import annotations

import json

import pytest
from mcp.shared.exceptions import MCPError

from tests.factories import MailAccountFactory
from tests.mcp.conftest import INITIALIZE, list_tools, post, with_client

pytestmark = pytest.mark.django_db(transaction=True)

FORWARDED = {
    "Forwarded": "for=203.0.113.9;proto=https",
    "X-Forwarded-For": "203.0.113.9",
    "X-Real-IP": "203.0.113.9",
    "X-Forwarded-Host": "mail.example.org",
}


@pytest.fixture(scope="module")
def open_server(module_server_factory):
    return module_server_factory(MAILFATHOM_MCP_AUTH="none")


@pytest.mark.parametrize("header", list(FORWARDED))
def test_posture_none_refuses_a_request_a_proxy_forwarded_with_403(open_server, header):
    status, body, _ = post(open_server, INITIALIZE, {header: FORWARDED[header]})
    assert status == 403
    assert json.loads(body) == {"error": "forbidden"}


def test_posture_none_refuses_the_real_client_behind_a_proxy(open_server):
    MailAccountFactory(account_id="billing")

    async def accounts(client):
        return await client.call_tool("list_accounts", {})

    with pytest.raises(MCPError):
        with_client(open_server.url, None, accounts, headers={"X-Forwarded-For": "203.0.113.9"})
    assert "mcp: unauthenticated request forwarded by a proxy refused" in open_server.log()


def test_posture_none_still_serves_a_local_client_that_sends_no_proxy_header(open_server):
    assert "list_accounts" in [tool["name"] for tool in list_tools(open_server, None)]


def test_posture_api_key_serves_a_valid_key_behind_a_proxy(mcp_server, api_key):
    headers = {"Authorization": f"Bearer {api_key}", **FORWARDED}
    assert post(mcp_server, INITIALIZE, headers)[0] == 200

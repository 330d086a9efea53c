"""/mcp as an HTTP endpoint: disabled, refused at startup, keys, Origin and Host, bounds."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from django.db import connection, transaction

from accounts.models import McpApiKey
from accounts.services.mcp_keys import create_key, revoke
from tests.factories import MailAccountFactory
from tests.mcp.conftest import INITIALIZE, call_tool, payload, post
from tests.mcp.servers import ROOT, server_env

pytestmark = pytest.mark.django_db(transaction=True)


def _tools_list(key: str | None, extra: dict[str, str] | None = None) -> dict[str, str]:
    headers = {"Authorization": f"Bearer {key}"} if key is not None else {}
    return {**headers, **(extra or {})}


# --- disabled, and refused at startup -------------------------------------------------------


def test_disabled_endpoint_answers_404_even_with_a_key(module_server_factory, api_key):
    server = module_server_factory(MAILFATHOM_MCP_ENABLED="false")
    status, body, _ = post(server, INITIALIZE, {"Authorization": f"Bearer {api_key}"})
    assert status == 404
    assert json.loads(body) == {"error": "not found"}


def test_enabled_without_a_posture_is_refused_at_startup(db):
    env = server_env(MAILFATHOM_MCP_AUTH="")
    result = subprocess.run(
        [sys.executable, "-c", "import mailfathom.asgi"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode != 0
    assert "MAILFATHOM_MCP_AUTH" in result.stderr
    assert "mailfathom.E020" in result.stderr


# --- API keys -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "headers",
    [
        {},
        {"Authorization": "Bearer "},
        {"Authorization": "Bearer mfk_not-a-key-anyone-was-given"},
        {"Authorization": "Basic dXNlcjpwYXNz"},
    ],
    ids=["no header", "empty bearer", "wrong key", "other scheme"],
)
def test_missing_or_wrong_key_is_401_without_detail(mcp_server, db, headers):
    status, body, response_headers = post(mcp_server, INITIALIZE, headers)
    assert status == 401
    assert json.loads(body) == {"error": "unauthorized"}
    assert response_headers["www-authenticate"] == "Bearer"


def test_revoked_key_is_401(mcp_server, db):
    issued = create_key("revoked")
    assert revoke(issued.record.pk)
    status, _, _ = post(mcp_server, INITIALIZE, {"Authorization": f"Bearer {issued.key}"})
    assert status == 401


def test_valid_key_is_served_and_its_use_recorded(mcp_server, db):
    issued = create_key("desktop")
    MailAccountFactory(account_id="billing")

    result = payload(call_tool(mcp_server, issued.key, "list_accounts"))

    assert [a["accountId"] for a in result["accounts"]] == ["billing"]
    assert McpApiKey.objects.get(pk=issued.record.pk).last_used_at is not None
    assert issued.key not in mcp_server.log()


# --- Origin and Host (DNS-rebinding protection) ---------------------------------------------


def test_origin_not_allowed_is_403_even_with_a_valid_key(mcp_server, api_key):
    status, _, _ = post(mcp_server, INITIALIZE, _tools_list(api_key, {"Origin": "http://evil.example"}))
    assert status == 403


def test_allowed_origin_is_served(mcp_server, api_key):
    status, _, _ = post(mcp_server, INITIALIZE, _tools_list(api_key, {"Origin": "http://localhost:6274"}))
    assert status == 200


def test_host_not_allowed_is_421(mcp_server, api_key):
    status, _, _ = post(mcp_server, INITIALIZE, _tools_list(api_key, {"Host": "rebound.example"}))
    assert status == 421


def test_configured_origin_and_host_are_served(module_server_factory, api_key):
    server = module_server_factory(
        MAILFATHOM_MCP_ALLOWED_HOSTS="mail.example.org",
        MAILFATHOM_MCP_ALLOWED_ORIGINS="https://inspector.example.org",
    )
    headers = _tools_list(api_key, {"Host": "mail.example.org", "Origin": "https://inspector.example.org"})
    assert post(server, INITIALIZE, headers)[0] == 200
    assert post(server, INITIALIZE, _tools_list(api_key))[0] == 421  # 127.0.0.1 is no longer listed


# --- bounds: body size and request timeout --------------------------------------------------


def test_body_over_the_limit_is_413(module_server_factory, api_key):
    server = module_server_factory(MAILFATHOM_MCP_MAX_BODY_BYTES="2048")
    padded = json.loads(INITIALIZE)
    padded["params"]["clientInfo"]["name"] = "x" * 4096
    status, _, _ = post(server, json.dumps(padded).encode(), _tools_list(api_key))
    assert status == 413


@pytest.mark.slow
def test_request_past_the_timeout_is_abandoned_with_504(module_server_factory, api_key):
    server = module_server_factory(MAILFATHOM_MCP_REQUEST_TIMEOUT="1")
    MailAccountFactory(account_id="billing")
    call = json.dumps(
        {
            "jsonrpc": "2.0",
            "id": 7,
            "method": "tools/call",
            "params": {"name": "list_accounts", "arguments": {}},
        }
    ).encode()
    headers = _tools_list(api_key, {"MCP-Protocol-Version": "2025-06-18"})

    # Hold the accounts table so the use case cannot read it until the timeout has passed.
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("LOCK TABLE accounts_mailaccount IN ACCESS EXCLUSIVE MODE")
        status, body, _ = post(server, call, headers)

    assert status == 504
    assert json.loads(body) == {"error": "timeout"}
    # Once the table is free, the server answers again.
    assert post(server, call, headers)[0] == 200


# --- posture none ---------------------------------------------------------------------------


def test_posture_none_on_loopback_serves_without_a_key(module_server_factory, db):
    server = module_server_factory(MAILFATHOM_MCP_AUTH="none")
    MailAccountFactory(account_id="billing")
    result = payload(call_tool(server, None, "list_accounts"))
    assert [a["accountId"] for a in result["accounts"]] == ["billing"]

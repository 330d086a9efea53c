"""Key checks never take a tool-call slot: a wrong key is 401 while every call slot is busy."""

from __future__ import annotations

import json
import threading

import pytest
from django.db import connection, transaction

from tests.factories import MailAccountFactory
from tests.mcp.conftest import post
from tests.support import wait_for

pytestmark = pytest.mark.django_db(transaction=True)

LIST_ACCOUNTS = json.dumps(
    {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "list_accounts", "arguments": {}}}
).encode()


def _headers(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}", "MCP-Protocol-Version": "2025-06-18"}


def _waiting_on_accounts() -> int:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM pg_locks WHERE NOT granted AND relation = 'accounts_mailaccount'::regclass"
        )
        return cursor.fetchone()[0]


def test_a_wrong_key_is_401_while_the_only_call_slot_is_busy(module_server_factory, api_key):
    # One call slot, and a request timeout short enough that a key check queued behind the
    # busy call would come back 504 within the test.
    server = module_server_factory(
        MAILFATHOM_MCP_MAX_CONCURRENT_CALLS="1", MAILFATHOM_MCP_REQUEST_TIMEOUT="5"
    )
    MailAccountFactory(account_id="billing")
    busy: dict[str, int] = {}

    with transaction.atomic():
        # Hold the accounts table: the one call slot is taken by a list_accounts waiting on it.
        with connection.cursor() as cursor:
            cursor.execute("LOCK TABLE accounts_mailaccount IN ACCESS EXCLUSIVE MODE")
        holder = threading.Thread(
            target=lambda: busy.setdefault("status", post(server, LIST_ACCOUNTS, _headers(api_key))[0])
        )
        holder.start()
        wait_for(
            lambda: _waiting_on_accounts() == 1,
            seconds=30,
            message=lambda: "the busy call never took its slot",
        )

        status, body, headers = post(server, LIST_ACCOUNTS, _headers("mfk_" + "w" * 43))
        assert status == 401
        assert json.loads(body) == {"error": "unauthorized"}
        assert headers["WWW-Authenticate"] == "Bearer"
        assert post(server, LIST_ACCOUNTS, {"MCP-Protocol-Version": "2025-06-18"})[0] == 401  # no key

        holder.join(timeout=30)
    assert busy["status"] == 504  # the call really held its slot past the request timeout

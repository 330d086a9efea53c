"""An MCP client signs a person in by OAuth and reads only the account they chose, end to end.

Everything is real: uvicorn serving mailfathom.asgi in posture oauth; the `mcp` Python SDK's
OAuth provider (discovery, dynamic registration or a client ID metadata document served on
https from this test, PKCE, the token request, RFC 9207's iss check); Chromium, driven by
Playwright, signing in on the plain login page and consenting to one of two accounts; a
loopback callback server receiving the code. Then list_accounts shows exactly the consented
account and search_emails reads only it. The server's access log is read for 404s: a
client's discovery must not stumble on any path it probes.
"""

from __future__ import annotations

import json
import os
import re
import shutil

import anyio
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters, stdio_client

from accounts.models import McpConnection, McpOAuthClient
from tests.mcp.conftest import error_code, payload
from tests.mcp.oauth_support import (
    PASSWORD,
    authorization_query,
    client_side,
    register_over_http,
    sign_in_and_consent,
    with_oauth_client,
    world_with_people,
)
from tests.support import free_port, screenshots_dir

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]


@pytest.fixture(scope="module")
def sides(tmp_path_factory):
    with client_side(tmp_path_factory.mktemp("oauth-client")) as side:
        yield side


# uvicorn's access log, which Django's logging setup would otherwise leave silent.
ACCESS_LOG = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {
        "access": {
            "()": "uvicorn.logging.AccessFormatter",
            "fmt": 'access "%(request_line)s" %(status_code)s',
            "use_colors": False,
        },
    },
    "handlers": {
        "access": {"class": "logging.StreamHandler", "formatter": "access", "stream": "ext://sys.stderr"}
    },
    "loggers": {"uvicorn.access": {"handlers": ["access"], "level": "INFO", "propagate": False}},
}


@pytest.fixture(scope="module")
def server(module_server_factory, sides, tmp_path_factory):
    log_config = tmp_path_factory.mktemp("oauth-log") / "uvicorn-log.json"
    log_config.write_text(json.dumps(ACCESS_LOG))
    return module_server_factory(
        log_config=log_config,
        MAILFATHOM_MCP_AUTH="oauth",
        MAILFATHOM_MCP_OAUTH_LOOPBACK_CLIENT_METADATA="true",
        # The document server's certificate is signed by the test's own CA.
        REQUESTS_CA_BUNDLE=str(sides.ca_path),
    )


@pytest.fixture
def people(settings):
    # Hashed the product's way: the server checks the password with the product's hashers.
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.PBKDF2PasswordHasher"]
    return world_with_people()


async def _read(client) -> dict:
    listed = payload(await client.call_tool("list_accounts", {}))
    found = payload(await client.call_tool("search_emails", {"queryText": "insurer payment"}))
    other = await client.call_tool("search_emails", {"queryText": "insurer", "accounts": ["private"]})
    return {"listed": listed, "found": found, "other": error_code(other)}


def _account_ids(listed: dict) -> list[str]:
    return [account["accountId"] for account in listed["accounts"]]


def _assert_read_only_work(seen: dict) -> None:
    assert _account_ids(seen["listed"]) == ["work"]
    matches = [match["summary"] for match in seen["found"]["matches"]]
    assert matches and {summary["accountId"] for summary in matches} == {"work"}
    assert any("Claim 4471" in summary["subject"] for summary in matches)
    assert seen["other"] == 53001


def test_sdk_client_registers_signs_in_and_reads_only_the_consented_account(server, sides, people):
    world, alice, _ = people
    seen = with_oauth_client(
        server.url,
        sides,
        ("alice", PASSWORD),
        ["Work"],
        _read,
        screenshots=screenshots_dir() / "oauth-sdk-registration",
    )
    _assert_read_only_work(seen)
    connection = McpConnection.objects.get(user=alice)
    assert connection.client.kind == "registered"
    assert [account.account_id for account in connection.accounts.all()] == ["work"]
    assert connection.resource == server.url
    callback = sides.last_callback()
    assert callback["iss"] == server.base  # RFC 9207


def test_sdk_client_with_a_client_id_metadata_document(server, sides, people):
    world, alice, _ = people
    before = sides.documents.documents_served
    seen = with_oauth_client(server.url, sides, ("alice", PASSWORD), ["Work"], _read, metadata_document=True)
    _assert_read_only_work(seen)
    client = McpOAuthClient.objects.get(client_id=sides.document_url)
    assert client.kind == "metadata"
    assert client.client_name == "Test assistant (metadata document)"
    assert sides.documents.documents_served > before
    assert McpConnection.objects.get(user=alice).client == client


def test_discovery_with_oauth_on_leaves_no_404_in_the_access_log(server, sides, people):
    with_oauth_client(server.url, sides, ("alice", PASSWORD), ["Work"], _read)
    log = server.log()
    assert '/.well-known/oauth-protected-resource/mcp HTTP/1.1" 200' in log
    assert '/.well-known/oauth-authorization-server HTTP/1.1" 200' in log
    assert re.search(r'" 404\b', log) is None, [line for line in log.splitlines() if '" 404' in line]


def test_denying_at_the_consent_page_sends_access_denied_and_opens_no_connection(server, sides, people):
    _, alice, _ = people
    client_id = register_over_http(server.base, sides.callback_url)
    url = f"{server.base}/oauth/authorize?{authorization_query(client_id, sides.callback_url, server.url)}"
    final = anyio.run(lambda: sign_in_and_consent(url, "alice", PASSWORD, [], decision="Deny"))
    assert final.startswith(sides.callback_url)
    answer = sides.last_callback()
    assert (answer["error"], answer["state"], answer["iss"]) == ("access_denied", "s1", server.base)
    assert "code" not in answer
    assert not McpConnection.objects.filter(user=alice).exists()


# --- Claude Desktop's bridge, mcp-remote, with its own OAuth flow -------------------------------

AUTHORIZE_LINE = re.compile(r"^(http://127\.0\.0\.1:\d+/oauth/authorize\?\S+)$", re.MULTILINE)


def test_mcp_remote_signs_in_by_itself_and_reads_only_the_consented_account(
    server,
    people,
    mcp_remote,
    tmp_path,
):
    """mcp-remote registers, prints the authorization URL (it cannot open a browser here), and
    waits on its own loopback callback; Chromium signs in and consents; the bridge then serves."""
    _, alice, _ = people
    log_path = tmp_path / "mcp-remote.log"
    params = StdioServerParameters(
        command=shutil.which("node") or "node",
        args=[str(mcp_remote), server.url, str(free_port()), "--host", "127.0.0.1"],
        # BROWSER=true: the opener "succeeds" without opening anything; the URL is read from the log.
        env={"MCP_REMOTE_CONFIG_DIR": str(tmp_path), "BROWSER": "true", "PATH": os.environ["PATH"]},
    )

    async def consent() -> None:
        with anyio.fail_after(60):
            while not (found := AUTHORIZE_LINE.search(log_path.read_text(errors="replace"))):
                await anyio.sleep(0.2)
        await sign_in_and_consent(found.group(1), "alice", PASSWORD, ["Work"])

    async def run() -> dict:
        with open(log_path, "w") as errlog:
            async with anyio.create_task_group() as group:
                group.start_soon(consent)
                async with Client(stdio_client(params, errlog=errlog)) as client:
                    return await _read(client)

    try:
        seen = anyio.run(run)
    except BaseException:
        print(log_path.read_text(errors="replace")[-4000:])
        raise
    _assert_read_only_work(seen)
    connection = McpConnection.objects.get(user=alice)
    assert connection.client.kind == "registered"
    assert [account.account_id for account in connection.accounts.all()] == ["work"]

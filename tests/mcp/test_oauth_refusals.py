"""What /mcp's OAuth refuses, with the documented status and code, and that nothing is read.

Tokens come from the product's own use cases (accounts.services.mcp_oauth_tokens) and are
presented to a real uvicorn in posture oauth; the authorization endpoint is driven with
Django's test client as a signed-in person. Each refusal has its control: the same call
with a good token does read.
"""

from __future__ import annotations

from datetime import timedelta
from urllib.parse import parse_qs, urlsplit

import httpx2
import pytest
from django.utils import timezone

from accounts.models import AccountMembership, McpConnection, McpOAuthClient, McpToken
from accounts.services import mcp_oauth_tokens
from accounts.services.mcp_oauth_clients import disable_client
from tests.configure import configure
from tests.mcp.conftest import call_tool, error_code, payload
from tests.mcp.oauth_support import VERIFIER, authorization_query, issue_token, world_with_people

pytestmark = pytest.mark.django_db(transaction=True)

CALLBACK = "http://127.0.0.1:8765/callback"


@pytest.fixture(scope="module")
def server(module_server_factory):
    return module_server_factory(MAILFATHOM_MCP_AUTH="oauth")


@pytest.fixture
def people():
    return world_with_people()


def _accounts(server, token) -> list[str]:
    return [
        account["accountId"] for account in payload(call_tool(server, token, "list_accounts"))["accounts"]
    ]


def _refused(server, token) -> httpx2.Response:
    return httpx2.post(
        server.url,
        json={"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "list_accounts"}},
        headers={
            "Authorization": f"Bearer {token}",
            "Accept": "application/json, text/event-stream",
            "MCP-Protocol-Version": "2025-06-18",
        },
        timeout=30,
    )


def _assert_invalid_token(server, response) -> None:
    assert response.status_code == 401
    assert response.headers["www-authenticate"] == (
        f'Bearer resource_metadata="{server.base}/.well-known/oauth-protected-resource/mcp", '
        'scope="mail:read", error="invalid_token"'
    )
    assert "accounts" not in response.text


def test_without_a_token_401_names_the_resource_metadata_without_an_error(server):
    response = httpx2.post(server.url, json={}, timeout=30)
    assert response.status_code == 401
    assert response.headers["www-authenticate"] == (
        f'Bearer resource_metadata="{server.base}/.well-known/oauth-protected-resource/mcp", '
        'scope="mail:read"'
    )


def test_a_token_for_another_audience_is_401(server, people):
    _, alice, _ = people
    elsewhere, _, _ = issue_token(alice, ["work"], "https://elsewhere.example/mcp")
    here, _, _ = issue_token(alice, ["work"], server.url)
    _assert_invalid_token(server, _refused(server, elsewhere))
    assert _accounts(server, here) == ["work"]


def test_an_expired_token_is_401_with_the_resource_metadata(server, people):
    _, alice, _ = people
    token, _, _ = issue_token(alice, ["work"], server.url)
    assert _accounts(server, token) == ["work"]
    McpToken.objects.update(access_expires_at=timezone.now() - timedelta(seconds=1))
    _assert_invalid_token(server, _refused(server, token))


def test_an_api_key_is_not_a_token_in_posture_oauth(server, people, api_key):
    _assert_invalid_token(server, _refused(server, api_key))


def test_person_a_cannot_reach_person_bs_mailbox(server, people):
    """Bob owns private only; naming work is 53001 (as for an unknown account) and reads nothing."""
    _, _, bob = people
    token, _, _ = issue_token(bob, ["private"], server.url)
    assert _accounts(server, token) == ["private"]
    assert (
        error_code(call_tool(server, token, "search_emails", {"queryText": "insurer", "accounts": ["work"]}))
        == 53001
    )
    found = payload(call_tool(server, token, "search_emails", {"queryText": "insurer payment"}))
    assert {match["summary"]["accountId"] for match in found["matches"]} == {"private"}


def test_consent_to_an_account_one_does_not_own_reaches_nothing_of_it(server, people):
    """Even a consent row naming work (bob never owned it) does not reach work."""
    _, _, bob = people
    token, _, _ = issue_token(bob, ["work", "private"], server.url)
    assert _accounts(server, token) == ["private"]


def test_a_person_removed_from_an_account_no_longer_reaches_it_on_the_next_call(server, people):
    _, alice, _ = people
    token, _, _ = issue_token(alice, ["work", "private"], server.url)
    assert _accounts(server, token) == ["private", "work"]
    AccountMembership.objects.filter(user=alice, account__account_id="private").delete()
    assert _accounts(server, token) == ["work"]
    assert (
        error_code(
            call_tool(server, token, "search_emails", {"queryText": "insurer", "accounts": ["private"]})
        )
        == 53001
    )


def test_a_disabled_client_and_a_revoked_connection_are_refused_at_once(server, people):
    _, alice, _ = people
    token, _, client = issue_token(alice, ["work"], server.url)
    other, _, _ = issue_token(alice, ["work"], server.url)
    assert _accounts(server, token) == ["work"]
    disable_client(client.pk)
    _assert_invalid_token(server, _refused(server, token))
    assert _accounts(server, other) == ["work"]
    mcp_oauth_tokens.revoke_connection(McpConnection.objects.get(client__disabled_at__isnull=True).pk)
    _assert_invalid_token(server, _refused(server, other))


# --- the token endpoint -------------------------------------------------------------------------


def _token_request(server, client: McpOAuthClient, **form: str) -> httpx2.Response:
    return httpx2.post(server.base + "/oauth/token", data={"client_id": client.client_id, **form}, timeout=30)


def test_refresh_rotates_and_a_replayed_refresh_token_ends_the_connection(server, people):
    _, alice, _ = people
    access, refresh, client = issue_token(alice, ["work"], server.url)
    rotated = _token_request(server, client, grant_type="refresh_token", refresh_token=refresh)
    assert rotated.status_code == 200, rotated.text
    body = rotated.json()
    assert body["refresh_token"] != refresh and body["token_type"].lower() == "bearer"
    assert body["expires_in"] == 3600 and body["scope"] == "mail:read"
    assert _accounts(server, body["access_token"]) == ["work"]
    replay = _token_request(server, client, grant_type="refresh_token", refresh_token=refresh)
    assert replay.status_code == 400 and replay.json()["error"] == "invalid_grant"
    _assert_invalid_token(server, _refused(server, body["access_token"]))
    assert McpConnection.objects.get(user=alice).is_revoked


def test_revocation_of_an_access_token_rfc_7009(server, people):
    _, alice, _ = people
    access, _, client = issue_token(alice, ["work"], server.url)
    response = httpx2.post(
        server.base + "/oauth/revoke", data={"client_id": client.client_id, "token": access}, timeout=30
    )
    assert response.status_code == 200
    _assert_invalid_token(server, _refused(server, access))


def test_a_refresh_for_another_resource_is_invalid_target(server, people):
    _, alice, _ = people
    _, refresh, client = issue_token(alice, ["work"], server.url)
    response = _token_request(
        server,
        client,
        grant_type="refresh_token",
        refresh_token=refresh,
        resource="https://elsewhere.example/mcp",
    )
    assert response.status_code == 400 and response.json()["error"] == "invalid_target"


# --- the authorization endpoint, as a signed-in person ------------------------------------------


@pytest.fixture
def signed_in(client, people, settings):
    configure(settings, mcp_enabled=True, mcp_auth="oauth")
    # authlib refuses plain http except on loopback, as the product does outside a test.
    settings.ALLOWED_HOSTS = ["localhost"]
    client.defaults["HTTP_HOST"] = "localhost"
    _, alice, _ = people
    client.force_login(alice)
    registered = McpOAuthClient.objects.create(
        client_id="mfcl_by_hand", kind="registered", client_name="By hand", redirect_uris=[CALLBACK]
    )
    return client, registered


RESOURCE = "http://localhost/mcp"


def _authorize(client, query: str):
    return client.get("/oauth/authorize?" + query)


def _redirect_query(response) -> dict[str, str]:
    assert response.status_code == 302, response.content
    location = response["Location"]
    assert location.startswith(CALLBACK)
    return {key: values[0] for key, values in parse_qs(urlsplit(location).query).items()}


def test_the_consent_page_offers_the_persons_accounts(signed_in):
    client, registered = signed_in
    page = _authorize(client, authorization_query(registered.client_id, CALLBACK, RESOURCE))
    assert page.status_code == 200
    assert b"By hand" in page.content and b"Work" in page.content and b"Private" in page.content


def test_a_plain_pkce_challenge_is_refused(signed_in):
    client, registered = signed_in
    query = authorization_query(
        registered.client_id, CALLBACK, RESOURCE, code_challenge=VERIFIER, code_challenge_method="plain"
    )
    answer = _redirect_query(_authorize(client, query))
    assert answer["error"] == "invalid_request" and answer["iss"] == "http://localhost"
    assert "code" not in answer


def test_a_request_without_pkce_is_refused(signed_in):
    client, registered = signed_in
    query = authorization_query(
        registered.client_id, CALLBACK, RESOURCE, code_challenge=None, code_challenge_method=None
    )
    assert _redirect_query(_authorize(client, query))["error"] == "invalid_request"


def test_a_redirect_uri_that_does_not_match_is_refused_without_redirecting(signed_in):
    client, registered = signed_in
    for wrong in ("https://attacker.example/callback", "http://127.0.0.1:8765/other", CALLBACK + "/"):
        page = _authorize(client, authorization_query(registered.client_id, wrong, RESOURCE))
        assert page.status_code == 400
        assert "Location" not in page


def test_a_loopback_redirect_uri_may_change_its_port(signed_in):
    client, registered = signed_in
    page = _authorize(
        client, authorization_query(registered.client_id, "http://127.0.0.1:49152/callback", RESOURCE)
    )
    assert page.status_code == 200


def test_another_resource_is_invalid_target(signed_in):
    client, registered = signed_in
    query = authorization_query(registered.client_id, CALLBACK, "https://elsewhere.example/mcp")
    assert _redirect_query(_authorize(client, query))["error"] == "invalid_target"


def test_consent_may_only_name_the_persons_own_accounts_and_a_code_works_once(signed_in, people):
    client, registered = signed_in
    _, alice, _ = people
    query = authorization_query(registered.client_id, CALLBACK, RESOURCE)
    page = client.post("/oauth/authorize?" + query, {"decision": "allow", "account": ["999999"]})
    assert page.status_code == 200 and b"Choose at least one account" in page.content
    work_pk = str(AccountMembership.objects.get(user=alice, account__account_id="work").account_id)
    answer = _redirect_query(
        client.post("/oauth/authorize?" + query, {"decision": "allow", "account": [work_pk]})
    )
    form = {
        "grant_type": "authorization_code",
        "code": answer["code"],
        "redirect_uri": CALLBACK,
        "client_id": registered.client_id,
        "code_verifier": VERIFIER,
        "resource": RESOURCE,
    }
    first = client.post("/oauth/token", form)
    assert first.status_code == 200, first.content
    connection = McpConnection.objects.get(user=alice)
    assert [account.account_id for account in connection.accounts.all()] == ["work"]
    again = client.post("/oauth/token", form)
    assert again.status_code == 400 and again.json()["error"] == "invalid_grant"
    connection.refresh_from_db()
    assert connection.is_revoked  # a code presented twice ends what it opened


def test_a_wrong_pkce_verifier_is_invalid_grant(signed_in, people):
    client, registered = signed_in
    _, alice, _ = people
    query = authorization_query(registered.client_id, CALLBACK, RESOURCE)
    pk = str(AccountMembership.objects.get(user=alice, account__account_id="work").account_id)
    answer = _redirect_query(client.post("/oauth/authorize?" + query, {"decision": "allow", "account": [pk]}))
    response = client.post(
        "/oauth/token",
        {
            "grant_type": "authorization_code",
            "code": answer["code"],
            "redirect_uri": CALLBACK,
            "client_id": registered.client_id,
            "code_verifier": "w" * 64,
        },
    )
    assert response.status_code == 400 and response.json()["error"] == "invalid_grant"
    assert not McpConnection.objects.exists()

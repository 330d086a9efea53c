"""The well-known documents of /mcp's authorization server, as RFC 9728 and RFC 8414 state them.

Read from a real uvicorn in posture oauth; and absent (404) from a server that takes API keys
only, so a client there is never sent looking for a sign-in it cannot have.
"""

from __future__ import annotations

import httpx2
import pytest
from mcp.shared.auth import OAuthMetadata, ProtectedResourceMetadata

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(scope="module")
def server(module_server_factory):
    return module_server_factory(MAILFATHOM_MCP_AUTH="oauth+api-key")


@pytest.mark.parametrize(
    "path", ["/.well-known/oauth-protected-resource", "/.well-known/oauth-protected-resource/mcp"]
)
def test_protected_resource_metadata(server, path):
    response = httpx2.get(server.base + path, timeout=30)
    assert response.status_code == 200
    assert response.headers["access-control-allow-origin"] == "*"
    assert response.json() == {
        "resource": server.url,
        "authorization_servers": [server.base],
        "scopes_supported": ["mail:read"],
        "bearer_methods_supported": ["header"],
        "resource_name": "MailFathom",
    }
    ProtectedResourceMetadata.model_validate(response.json())  # as the SDK reads it


def test_authorization_server_metadata(server):
    document = httpx2.get(server.base + "/.well-known/oauth-authorization-server", timeout=30).json()
    assert document["issuer"] == server.base
    assert document["authorization_endpoint"] == server.base + "/oauth/authorize"
    assert document["token_endpoint"] == server.base + "/oauth/token"
    assert document["registration_endpoint"] == server.base + "/oauth/register"
    assert document["revocation_endpoint"] == server.base + "/oauth/revoke"
    assert document["code_challenge_methods_supported"] == ["S256"]
    assert document["authorization_response_iss_parameter_supported"] is True
    assert document["client_id_metadata_document_supported"] is True
    assert document["response_types_supported"] == ["code"]
    assert document["grant_types_supported"] == ["authorization_code", "refresh_token"]
    OAuthMetadata.model_validate(document)


def test_openid_configuration_is_not_offered(server):
    """Not an OpenID provider: RFC 8414 metadata is the one discovery document (MCP allows either)."""
    assert httpx2.get(server.base + "/.well-known/openid-configuration", timeout=30).status_code == 404


def test_an_api_key_still_works_in_oauth_plus_api_key(server, api_key):
    from tests.mcp.conftest import call_tool, payload

    assert "accounts" in payload(call_tool(server, api_key, "list_accounts"))


def test_with_api_keys_only_there_is_no_oauth_to_discover(mcp_server):
    for path in (
        "/.well-known/oauth-protected-resource/mcp",
        "/.well-known/oauth-authorization-server",
        "/oauth/authorize",
    ):
        assert httpx2.get(mcp_server.base + path, timeout=30).status_code == 404
    assert httpx2.post(mcp_server.url, json={}, timeout=30).headers["www-authenticate"] == "Bearer"

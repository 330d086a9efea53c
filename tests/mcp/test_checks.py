"""The MCP posture is refused at startup when it is missing or unsafe for the bound address."""

from __future__ import annotations

import pytest
from django.core.checks import ERROR, WARNING

from mailfathom.checks import check_mcp_posture
from mailfathom.core import config
from tests.configure import configure


@pytest.fixture
def mcp_settings(settings):
    def change(**values):
        configure(settings, **values)
        return check_mcp_posture()

    return change


def _ids(messages) -> list[tuple[str, int]]:
    return [(message.id, message.level) for message in messages]


def test_disabled_endpoint_needs_no_posture(mcp_settings):
    assert mcp_settings(mcp_enabled=False, mcp_auth="") == []


def test_enabled_without_posture_is_an_error_naming_the_setting(mcp_settings):
    messages = mcp_settings(mcp_enabled=True, mcp_auth="")
    assert _ids(messages) == [("mailfathom.E020", ERROR)]
    assert "MAILFATHOM_MCP_AUTH" in messages[0].msg


@pytest.mark.parametrize("host", ["127.0.0.1", "::1", "[::1]", "localhost", "127.0.0.2"])
def test_posture_none_on_loopback_is_accepted(mcp_settings, host):
    assert mcp_settings(mcp_enabled=True, mcp_auth="none", http_host=host) == []


@pytest.mark.parametrize("host", ["0.0.0.0", "192.0.2.10", "mail.example.org", "::"])
def test_posture_none_off_loopback_is_refused_without_the_override(mcp_settings, host):
    messages = mcp_settings(mcp_enabled=True, mcp_auth="none", http_host=host)
    assert ("mailfathom.E021", ERROR) in _ids(messages)
    assert "MAILFATHOM_MCP_ALLOW_UNAUTHENTICATED_NONLOOPBACK" in messages[0].msg


def test_the_override_allows_posture_none_off_loopback(mcp_settings):
    messages = mcp_settings(
        mcp_enabled=True,
        mcp_auth="none",
        http_host="0.0.0.0",
        mcp_allow_unauthenticated_nonloopback=True,
        mcp_allowed_hosts="mail.example.org",
    )
    assert messages == []


def test_api_key_off_loopback_is_accepted_but_warns_about_loopback_only_hosts(mcp_settings):
    messages = mcp_settings(mcp_enabled=True, mcp_auth="api-key", http_host="0.0.0.0")
    assert _ids(messages) == [("mailfathom.W020", WARNING)]


def test_an_unknown_posture_is_a_settings_problem():
    loaded = config.load({"MAILFATHOM_MCP_AUTH": "password"})
    assert loaded.problems["MAILFATHOM_MCP_AUTH"] == (
        "MAILFATHOM_MCP_AUTH must be one of api-key, oauth, oauth+api-key, none."
    )


@pytest.mark.parametrize("posture", ["oauth", "oauth+api-key"])
def test_oauth_on_loopback_needs_no_public_base_url(mcp_settings, posture):
    assert mcp_settings(mcp_enabled=True, mcp_auth=posture, http_host="127.0.0.1", public_base_url="") == []


@pytest.mark.parametrize("posture", ["oauth", "oauth+api-key"])
def test_oauth_off_loopback_without_a_public_base_url_warns(mcp_settings, posture):
    messages = mcp_settings(
        mcp_enabled=True,
        mcp_auth=posture,
        http_host="0.0.0.0",
        public_base_url="",
        mcp_allowed_hosts="mail.example.org",
    )
    assert _ids(messages) == [("mailfathom.W021", WARNING)]
    assert "MAILFATHOM_PUBLIC_BASE_URL" in messages[0].msg
    assert (
        mcp_settings(
            mcp_enabled=True,
            mcp_auth=posture,
            http_host="0.0.0.0",
            public_base_url="https://mail.example.org",
            mcp_allowed_hosts="mail.example.org",
        )
        == []
    )

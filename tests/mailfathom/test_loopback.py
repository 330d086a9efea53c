"""One loopback test (mailfathom.core.hosts.is_loopback_host) behind every loopback-only gate:
unencrypted IMAP, the startup check of posture none, and the request-time loopback gate."""

from __future__ import annotations

import anyio
import pytest
from django.core.exceptions import ValidationError

from accounts.models import Security
from mailfathom.checks import check_mcp_posture
from mailfathom.core.hosts import is_loopback_host
from mailfathom.mcp.http import LoopbackGate
from tests.configure import configure
from tests.factories import MailAccountFactory
from tests.support import refusals

ACCEPTED = [
    "localhost",
    "LocalHost",
    "127.0.0.1",
    "127.0.0.2",
    "127.255.255.254",
    "::1",
    "0:0:0:0:0:0:0:1",
    "[::1]",
    "::ffff:127.0.0.1",
    "[::ffff:127.0.0.1]",
]
REFUSED = [
    "localhost.",
    "localhost.localdomain",
    "mail.localhost",
    "localhost.evil.example",
    "imap.example.org",
    "0.0.0.0",
    "::",
    "10.0.0.1",
    "128.0.0.1",
    "::2",
    "::ffff:10.0.0.1",
    "127.1",
    "[127.0.0.1]",
    "[localhost]",
    "[::1",
    "::1]",
    "[[::1]]",
    "127.0.0.1:8000",
    "localhost:8000",
    " localhost",
    "127.0.0.1 ",
    "",
]


@pytest.mark.parametrize("host", ACCEPTED)
def test_a_loopback_name_or_address_is_accepted(host):
    assert is_loopback_host(host)


@pytest.mark.parametrize("host", REFUSED)
def test_any_other_name_or_address_is_refused(host):
    assert not is_loopback_host(host)


@pytest.mark.django_db
@pytest.mark.parametrize("host", ["localhost", "[::1]", "::ffff:127.0.0.1"])
def test_unencrypted_imap_is_allowed_on_an_accepted_host(host):
    assert refusals(MailAccountFactory.build(imap_host=host, security=Security.NONE)) == {}


@pytest.mark.django_db
@pytest.mark.parametrize("host", ["localhost.localdomain", "localhost.", "[127.0.0.1]"])
def test_unencrypted_imap_is_refused_on_a_refused_host(host):
    with pytest.raises(ValidationError) as caught:
        MailAccountFactory.build(imap_host=host, security=Security.NONE).full_clean()
    assert caught.value.message_dict["security"] == ["Unencrypted IMAP is allowed only for a loopback host."]


def _posture_none_on(settings, host: str) -> list[str]:
    configure(
        settings,
        mcp_enabled=True,
        mcp_auth="none",
        http_host=host,
        mcp_allow_unauthenticated_nonloopback=False,
    )
    return [message.id for message in check_mcp_posture()]


@pytest.mark.parametrize("host", ["localhost", "[::1]", "127.0.0.2"])
def test_posture_none_starts_when_bound_to_an_accepted_host(settings, host):
    assert _posture_none_on(settings, host) == []


@pytest.mark.parametrize("host", ["localhost.localdomain", "localhost.", "0.0.0.0"])
def test_posture_none_is_refused_at_startup_when_bound_to_a_refused_host(settings, host):
    assert "mailfathom.E021" in _posture_none_on(settings, host)


def _gate_status(address: str) -> int:
    sent: list[dict] = []

    async def inner(scope, receive, send):
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b""})

    async def receive():
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message):
        sent.append(message)

    scope = {"type": "http", "method": "POST", "path": "/mcp", "headers": [], "server": (address, 8000)}
    anyio.run(LoopbackGate(inner), scope, receive, send)
    return sent[0]["status"]


@pytest.mark.parametrize("address", ["127.0.0.1", "::1", "::ffff:127.0.0.1"])
def test_the_request_gate_serves_a_request_that_arrived_on_loopback(address):
    assert _gate_status(address) == 200


@pytest.mark.parametrize("address", ["192.0.2.10", "::ffff:192.0.2.10", "::"])
def test_the_request_gate_refuses_a_request_that_arrived_elsewhere(address):
    assert _gate_status(address) == 403

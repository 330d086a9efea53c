"""The connection test's guards (issue 11, cases 1 and 6; issue 14's CA file), on a real Dovecot.

Where the stored password may go, which addresses are reached, what a failure tells apart,
which certificate authorities are trusted, and that only a POST with a CSRF token connects.
See docs/operations/accounts.md.
"""

from __future__ import annotations

import logging
import socket
import ssl
import threading
import time
from collections.abc import Iterator

import pytest
from django.test import Client
from django.urls import reverse

from accounts.models import MailAccount, Security
from accounts.services import connection, imap
from mailbox.sync.failures import CANNOT_CONNECT, classify
from tests.configure import configure
from tests.dovecot import DovecotServer
from tests.factories import MailAccountFactory
from tests.support import free_port

UNREACHABLE = connection.SENTENCES["unreachable"]


def make_account(
    host: str = "127.0.0.1", port: int = 143, security: str = Security.NONE, username: str = "alice"
) -> MailAccount:
    account = MailAccountFactory(imap_host=host, imap_port=port, security=security, username=username)
    account.set_credential("alice-secret")
    account.save()
    return account


def connections_logged(server: DovecotServer, offset: int, wait: float = 1.5) -> list[str]:
    """Dovecot's imap-login lines written after `offset`: one per connection it accepted."""
    deadline = time.monotonic() + wait
    while True:
        with server.log_path.open(errors="replace") as log:
            log.seek(offset)
            lines = [line for line in log.read().splitlines() if "imap-login" in line]
        if lines or time.monotonic() > deadline:
            return lines
        time.sleep(0.05)


def page_url(account: MailAccount) -> str:
    return reverse("admin:accounts_mailaccount_test_connection", args=[account.pk])


def connection_post(account: MailAccount, **changes: str) -> dict[str, str]:
    """What the page's "Test connection" button posts: the saved settings, with `changes`."""
    data = {
        "imap_host": account.imap_host,
        "imap_port": str(account.imap_port),
        "security": account.security,
        "username": account.username,
        "password": "",
        "_test_connection": "Test connection",
    }
    return {**data, **changes}


@pytest.fixture
def tls_non_imap_server(dovecot) -> Iterator[int]:
    """A loopback TLS port with the test CA's certificate that answers like a web server."""
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(dovecot.cert_path, dovecot.root / "server.key")
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    listener.settimeout(0.1)
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                raw = listener.accept()[0]
            except TimeoutError:
                continue
            try:
                with context.wrap_socket(raw, server_side=True) as tls:
                    tls.sendall(b"HTTP/1.1 400 Bad Request\r\n\r\n")
            except OSError:
                raw.close()  # the client gave up on the handshake (untrusted certificate)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield int(listener.getsockname()[1])
    stop.set()
    thread.join(timeout=5)
    listener.close()


# --- case 1: the stored password stays with the server it was saved for ---------------------


@pytest.mark.dovecot
@pytest.mark.django_db
@pytest.mark.parametrize(
    ("change", "named"),
    [
        ("host", "IMAP host"),
        ("port", "IMAP port"),
        ("username", "IMAP user name"),
    ],
)
def test_changed_server_with_a_blank_password_is_refused_without_connecting(
    dovecot, admin_client, change, named
):
    account = make_account(port=dovecot.imap_port)
    changes = {
        "host": {"imap_host": "localhost"},  # the same Dovecot under another name
        "port": {"imap_port": str(dovecot.imaps_port), "security": Security.TLS},
        "username": {"username": "bob"},
    }[change]
    offset = dovecot.log_path.stat().st_size

    response = admin_client.post(page_url(account), connection_post(account, **changes))

    assert response.status_code == 200
    errors = response.context["connection_form"].errors["password"]
    assert len(errors) == 1 and named in errors[0] and "enter the IMAP password" in errors[0]
    assert connections_logged(dovecot, offset) == []  # the stored password went nowhere


@pytest.mark.django_db
def test_changed_security_alone_also_needs_the_password_again():
    account = make_account(port=993, security=Security.TLS)
    endpoint = connection.Endpoint.of(account)._replace(security=Security.STARTTLS)

    report = connection.test_connection(account, endpoint=endpoint, timeout=5)

    assert "security" in report.message and "enter the IMAP password" in report.message
    assert report.kind == "password_needed"


@pytest.mark.dovecot
@pytest.mark.django_db
def test_changed_server_with_the_password_typed_again_is_tested_but_not_mapped(
    dovecot, admin_client, settings
):
    configure(settings, imap_ca_file=str(dovecot.ca_path))
    account = make_account(port=dovecot.imap_port)
    form = connection_post(
        account, imap_port=str(dovecot.imaps_port), security=Security.TLS, password="alice-secret"
    )

    response = admin_client.post(page_url(account), form)

    content = response.content.decode()
    assert response.context["report"].ok, response.context["report"].message
    assert "remote-folders" not in content  # folders of unsaved settings are not mapped here
    assert "differ from the saved account" in content


@pytest.mark.dovecot
@pytest.mark.django_db
def test_saved_server_with_a_blank_password_uses_the_stored_one(dovecot, admin_client):
    account = make_account(port=dovecot.imap_port)

    response = admin_client.post(page_url(account), connection_post(account))

    assert response.context["report"].ok, response.context["report"].message
    assert "remote-folders" in response.content.decode()


# --- case 1: which addresses are reached -------------------------------------------------------


@pytest.mark.django_db
@pytest.mark.parametrize(
    "host",
    ["169.254.169.254", "fe80::1", "::ffff:169.254.169.254", "0.0.0.0", "::", "224.0.0.1", "ff02::1"],
)
def test_link_local_unspecified_and_multicast_addresses_are_refused_before_connecting(host):
    account = make_account(host=host, port=993, security=Security.TLS)

    started = time.monotonic()
    report = connection.test_connection(account, timeout=5)

    assert "link-local" in report.message
    assert time.monotonic() - started < 1
    assert report.kind == "destination_refused"


@pytest.mark.django_db
def test_a_name_resolving_to_any_link_local_address_is_refused(monkeypatch):
    def resolve(host, port, *args, **kwargs):
        return [
            (socket.AF_INET, socket.SOCK_STREAM, 6, "", ("192.0.2.10", port)),
            (socket.AF_INET, socket.SOCK_STREAM, 6, "", ("169.254.169.254", port)),
        ]

    monkeypatch.setattr(imap, "getaddrinfo", resolve)  # our seam: the resolver imap.py calls
    account = make_account(host="imap.mailfathom-test.invalid", port=993, security=Security.TLS)

    report = connection.test_connection(account, timeout=5)

    assert report.kind == "destination_refused"


@pytest.mark.dovecot
@pytest.mark.django_db
def test_the_name_is_resolved_once_and_the_checked_address_is_the_one_connected(dovecot, monkeypatch):
    answers = iter(["127.0.0.1", "169.254.169.254", "169.254.169.254"])  # a rebinding resolver
    calls = []

    def resolve(host, port, *args, **kwargs):
        calls.append(host)
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (next(answers), port))]

    monkeypatch.setattr(imap, "getaddrinfo", resolve)
    account = make_account(host="localhost", port=dovecot.imap_port)

    report = connection.test_connection(account, timeout=5)

    assert report.ok, report.message
    assert calls == ["localhost"]


@pytest.mark.dovecot
@pytest.mark.django_db
def test_private_addresses_stay_allowed(dovecot):
    # 127.0.0.2 stands for any in-house address: only link-local, unspecified and multicast
    # targets are refused, so the test reaches Dovecot and gets an IMAP-level answer.
    account = make_account(host=dovecot.plain_only_host, port=dovecot.plain_only_port)

    report = connection.test_connection(account, timeout=5)

    assert "refuses passwords on an unencrypted connection" in report.message


# --- case 3: before a greeting, one message for every network failure ----------------------------


@pytest.fixture
def silent_port() -> Iterator[int]:
    """A loopback port that accepts connections and never says a word."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    yield int(listener.getsockname()[1])
    listener.close()


@pytest.mark.dovecot
@pytest.mark.django_db
def test_refused_silent_not_tls_not_imap_and_unresolvable_all_say_the_same(
    dovecot, silent_port, tls_non_imap_server, caplog
):
    caplog.set_level(logging.DEBUG, logger="accounts.services.connection")
    cases = {
        "refused": make_account(port=free_port()),
        "silent": make_account(port=silent_port),
        "not tls": make_account(port=dovecot.imap_port, security=Security.TLS),
        "tls, not imap": make_account(port=tls_non_imap_server, security=Security.TLS),
        "no such name": make_account(host="imap.mailfathom-test.invalid", security=Security.TLS),
    }

    reports = {name: connection.test_connection(account, timeout=0.5) for name, account in cases.items()}

    assert {name: report.message for name, report in reports.items()} == dict.fromkeys(cases, UNREACHABLE)
    ours = [record for record in caplog.records if record.name == "accounts.services.connection"]
    infos = [record.getMessage() for record in ours if record.levelno == logging.INFO]
    assert len(infos) == len(cases) and all("kind=unreachable" in line for line in infos)
    assert all("127.0.0.1" not in r.getMessage() and "invalid" not in r.getMessage() for r in ours)
    assert {report.kind for report in reports.values()} == {"unreachable"}


# --- issue 14: the same TLS context as synchronization, with MAILFATHOM_IMAP_CA_FILE ---------------


@pytest.mark.dovecot
@pytest.mark.django_db
@pytest.mark.parametrize("security", [Security.TLS, Security.STARTTLS])
def test_test_ca_certificate_is_untrusted_without_the_ca_file_and_trusted_with_it(
    dovecot, settings, security
):
    port = dovecot.imaps_port if security == Security.TLS else dovecot.imap_port
    account = make_account(port=port, security=security)

    untrusted = connection.test_connection(account, timeout=5)
    configure(settings, imap_ca_file=str(dovecot.ca_path))
    trusted = connection.test_connection(account, timeout=5)

    assert "certificate is not trusted" in untrusted.message
    assert "MAILFATHOM_IMAP_CA_FILE" in untrusted.message
    assert trusted.ok, trusted.message
    assert untrusted.kind == "tls_certificate"


# --- case 2: only a POST with a CSRF token connects ----------------------------------------------


@pytest.mark.dovecot
@pytest.mark.django_db
def test_get_shows_a_post_form_and_never_connects(dovecot, admin_client):
    account = make_account(port=dovecot.imap_port)
    offset = dovecot.log_path.stat().st_size

    response = admin_client.get(page_url(account))

    content = response.content.decode()
    assert response.status_code == 200
    assert response.context["report"] is None
    assert '<form method="post" id="connection-form"' in content
    assert 'name="csrfmiddlewaretoken"' in content and 'name="_test_connection"' in content
    assert connections_logged(dovecot, offset) == []


@pytest.mark.dovecot
@pytest.mark.django_db
def test_test_post_without_csrf_token_is_refused_and_never_connects(dovecot, admin_user):
    account = make_account(port=dovecot.imap_port)
    client = Client(enforce_csrf_checks=True)
    client.force_login(admin_user)
    offset = dovecot.log_path.stat().st_size

    response = client.post(page_url(account), connection_post(account))

    assert response.status_code == 403
    assert connections_logged(dovecot, offset) == []


# --- synchronization opens sessions through the same rules -----------------------------------------


@pytest.mark.django_db
def test_synchronization_refuses_a_link_local_host_as_a_server_it_cannot_reach():
    account = make_account(host="169.254.169.254", port=993, security=Security.TLS)

    started = time.monotonic()
    with pytest.raises(imap.DestinationRefused) as refused:
        imap.open_client(account, timeout=5)

    assert time.monotonic() - started < 1
    assert classify(refused.value) == CANNOT_CONNECT


@pytest.mark.dovecot
@pytest.mark.django_db
def test_synchronization_sessions_trust_the_same_ca_file(dovecot, settings):
    configure(settings, imap_ca_file=str(dovecot.ca_path))
    account = make_account(port=dovecot.imaps_port, security=Security.TLS)

    client = imap.open_client(account, timeout=5)

    assert client.list_folders()
    client.logout()

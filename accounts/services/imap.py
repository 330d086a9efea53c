"""Open an authenticated IMAP session for an account, as its security setting says.

Shared by the connection test and synchronization so both reach a server the same way:
one TLS context builder (system trust, the account's own CA, MAILFATHOM_IMAP_CA_FILE), and one address rule
(the host is resolved once, link-local, unspecified and multicast addresses are refused,
and the checked address is the one connected). See docs/operations/accounts.md.
"""

from __future__ import annotations

import imaplib
import ipaddress
import socket
import ssl
from socket import getaddrinfo  # a module name, so a test can script the resolver here
from typing import Any

from django.conf import settings
from imapclient import IMAPClient, imap4, tls
from imapclient.exceptions import LoginError

from accounts.models import AuthMethod, MailAccount, SaslMechanism, Security
from accounts.services import oauth_tokens
from accounts.services.provider_refusals import ProviderRefusal, recognize
from mailfathom.core.errors import Code

Address = tuple[int, tuple[Any, ...]]  # (address family, socket address)


def tls_context(account: MailAccount | None = None) -> ssl.SSLContext:
    """Return the TLS context for IMAP: system trust, `account`'s own CA, MAILFATHOM_IMAP_CA_FILE.

    The account's CA (MailAccount.imap_ca_pem, validated PEM) is trusted for that account's
    connections only; the deployment-wide file, when set, for every account.
    """
    context = ssl.create_default_context()
    own = account.imap_ca_pem if account is not None else ""
    if own:
        context.load_verify_locations(cadata=own)
    extra = settings.MAILFATHOM.imap_ca_file
    if extra:
        context.load_verify_locations(cafile=extra)
    return context


class LoginDisabled(Exception):
    """The server refuses passwords on this connection (it advertises LOGINDISABLED)."""


class DestinationRefused(OSError):
    """The host is, or resolves to, an address MailFathom never connects to.

    An OSError, so callers that classify network failures (synchronization) count it as
    a server that cannot be reached.
    """


def _refused(address: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
    # Link-local holds the cloud metadata services (169.254.169.254, fe80::/10); the
    # unspecified address reaches this machine; multicast is no server. Private ranges
    # stay allowed: in-house mail servers live there.
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped  # Python before 3.13 does not look through the mapping
    return address.is_link_local or address.is_unspecified or address.is_multicast


def resolve(host: str, port: int) -> list[Address]:
    """Resolve `host` once; return its addresses, or raise DestinationRefused.

    Every address is checked, so a name answering with one public and one link-local
    address is refused. Raises socket.gaierror when the name does not resolve.
    """
    found = getaddrinfo(host, port, 0, socket.SOCK_STREAM)
    addresses: list[Address] = [(family, sockaddr) for family, _, _, _, sockaddr in found]
    for _, sockaddr in addresses:
        address = ipaddress.ip_address(str(sockaddr[0]).split("%", 1)[0])  # drop an IPv6 zone
        if _refused(address):
            raise DestinationRefused("the host resolves to a refused address")
    return addresses


def _connect_any(addresses: list[Address], timeout: float | None) -> socket.socket:
    """Connect to the first of `addresses` that accepts, as socket.create_connection would."""
    last: OSError = OSError("the host has no address")
    for family, sockaddr in addresses:
        sock = socket.socket(family, socket.SOCK_STREAM)
        try:
            sock.settimeout(timeout)
            sock.connect(sockaddr)
        except OSError as error:
            sock.close()
            last = error
            continue
        return sock
    raise last


class _PinnedPlain(imap4.IMAP4WithTimeout):
    def __init__(self, host: str, port: int, timeout: float | None, addresses: list[Address]) -> None:
        self._addresses = addresses
        super().__init__(host, port, timeout)

    def _create_socket(self, timeout: float | None = None) -> socket.socket:
        return _connect_any(self._addresses, timeout if timeout is not None else self._timeout)


class _PinnedTLS(tls.IMAP4_TLS):
    def __init__(
        self,
        host: str,
        port: int,
        ssl_context: ssl.SSLContext | None,
        timeout: float | None,
        addresses: list[Address],
    ) -> None:
        self._addresses = addresses
        super().__init__(host, port, ssl_context, timeout)

    def _create_socket(self, timeout: float | None = None) -> socket.socket:
        sock = _connect_any(self._addresses, timeout if timeout is not None else self._timeout)
        # The certificate is checked against the host name, not the address connected.
        wrapped: socket.socket = tls.wrap_socket(sock, self.ssl_context, self.host)  # IMAPClient's, untyped
        return wrapped


class PinnedIMAPClient(IMAPClient):
    """An IMAPClient that connects to addresses resolved beforehand, never resolving again.

    Resolving once and connecting to the checked address is what keeps a name that
    answers differently the second time (DNS rebinding) from reaching a refused address.
    Overrides IMAPClient._create_IMAP4 (imapclient 4.1), the one place it opens sockets.
    """

    def __init__(self, host: str, *, addresses: list[Address], **kwargs: Any) -> None:
        self._addresses = addresses
        super().__init__(host, **kwargs)

    def _create_IMAP4(self) -> imaplib.IMAP4:
        connect_timeout = getattr(self._timeout, "connect", None)
        if self.ssl:
            return _PinnedTLS(self.host, self.port, self.ssl_context, connect_timeout, self._addresses)
        return _PinnedPlain(self.host, self.port, connect_timeout, self._addresses)


def connect(
    account: MailAccount,
    *,
    timeout: float = 30.0,
    ssl_context: ssl.SSLContext | None = None,
    addresses: list[Address] | None = None,
) -> IMAPClient:
    """Connect to the account's server (through TLS when implicit) and read its greeting.

    `addresses` are the host's, from resolve(); resolved here when not given. Nothing is
    sent but what TLS needs. Raises DestinationRefused, socket.gaierror, or the socket, ssl
    and imaplib exceptions as they come: every one means no IMAP greeting was read.
    """
    if addresses is None:
        addresses = resolve(account.imap_host, account.imap_port)
    implicit_tls = account.security == Security.TLS
    return PinnedIMAPClient(
        account.imap_host,
        addresses=addresses,
        port=account.imap_port,
        ssl=implicit_tls,
        ssl_context=(ssl_context or tls_context(account)) if implicit_tls else None,
        timeout=timeout,
    )


def greets_as_imap(addresses: list[Address], *, implicit_tls: bool, timeout: float) -> bool:
    """Whether the first of `addresses` that accepts sends an IMAP greeting; nothing is sent.

    With `implicit_tls` the greeting is read through TLS whose certificate is NOT checked:
    only to tell an IMAP server with an untrusted certificate from any other TLS service,
    so a certificate problem is reported only where an IMAP server answers. No command,
    and so no credential, ever goes over this connection.
    """
    try:
        sock = _connect_any(addresses, timeout)
        if implicit_tls:
            unchecked = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
            unchecked.check_hostname = False
            unchecked.verify_mode = ssl.CERT_NONE
            sock = unchecked.wrap_socket(sock)
        with sock:
            greeting = b""
            while b"\n" not in greeting and len(greeting) < 1024:
                chunk = sock.recv(1024)
                if not chunk:
                    break
                greeting += chunk
    except OSError:
        return False
    return greeting.upper().startswith((b"* OK", b"* PREAUTH", b"* BYE"))


def log_in(
    client: IMAPClient,
    account: MailAccount,
    *,
    password: str | None = None,
    ssl_context: ssl.SSLContext | None = None,
) -> None:
    """Upgrade with STARTTLS when the account says so, then log in; shut down on failure.

    `password` defaults to the account's stored credential; an OAuth 2.0 account (with no
    `password` given) presents its access token instead. Raises LoginDisabled,
    ProviderRefusal (a provider's known refusal), oauth_tokens.SignInRefused, or the
    socket, ssl and imapclient exceptions as they come: callers classify them.
    """
    try:
        if account.security == Security.STARTTLS:
            client.starttls(ssl_context or tls_context(account))
        if account.auth_method == AuthMethod.OAUTH2 and password is None:
            _log_in_with_token(client, account)
            return
        if client.has_capability("LOGINDISABLED"):
            raise LoginDisabled
        try:
            client.login(account.username, account.get_credential() if password is None else password)
        except LoginError as error:
            _raise_known_refusal(error)
            raise
    except BaseException:
        try:
            client.shutdown()
        except Exception:  # noqa: S110 (already failing; the original error is what matters)
            pass
        raise


def _raise_known_refusal(error: LoginError) -> None:
    """Raise the provider's refusal `error` is, in a code's words; return if it is none known."""
    known = recognize(str(error))
    if known is not None:
        raise ProviderRefusal(known.code, known.pause) from None  # the server's words stay behind


def _authenticate(client: IMAPClient, account: MailAccount, token: str) -> None:
    if account.sasl_mechanism == SaslMechanism.OAUTHBEARER:
        client.oauthbearer_login(account.username, token)
    else:
        client.oauth2_login(account.username, token)


def _log_in_with_token(client: IMAPClient, account: MailAccount) -> None:
    """AUTHENTICATE with the account's access token; once more with a new one if refused.

    A server may refuse a token before the expiry it was issued with (revoked, or a
    provider's clock): one refusal earns a fresh token, a second is TOKEN_REFUSED, since a
    token just issued and refused points at a missing permission, not at its age.
    """
    token = oauth_tokens.access_token(account)
    try:
        _authenticate(client, account, token)
        return
    except LoginError as error:
        _raise_known_refusal(error)
    token = oauth_tokens.access_token(account, refused=token)
    try:
        _authenticate(client, account, token)
    except LoginError as error:
        _raise_known_refusal(error)
        raise ProviderRefusal(Code.TOKEN_REFUSED) from None


def open_client(
    account: MailAccount,
    *,
    timeout: float = 30.0,
    ssl_context: ssl.SSLContext | None = None,
    password: str | None = None,
) -> IMAPClient:
    """Connect, secure and log in; the caller owns the session and must log out.

    `password` defaults to the account's stored credential. Raises DestinationRefused,
    LoginDisabled, or the socket, ssl and imapclient exceptions as they come.
    """
    context = ssl_context or tls_context(account)
    client = connect(account, timeout=timeout, ssl_context=context)
    log_in(client, account, password=password, ssl_context=context)
    return client


def close_client(client: IMAPClient) -> None:
    """End a session open_client opened: LOGOUT, else drop the socket; never raises."""
    try:
        client.logout()
    except Exception:
        try:
            client.shutdown()
        except Exception:  # noqa: S110 (the session is gone either way)
            pass

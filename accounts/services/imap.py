"""Open an authenticated IMAP session for an account, as its security setting says.

Shared by the connection test and synchronization so both reach a server the same way.
"""

from __future__ import annotations

import ssl

from django.conf import settings
from imapclient import IMAPClient

from accounts.models import MailAccount, Security


def tls_context() -> ssl.SSLContext:
    """Return the TLS context for IMAP: system trust plus MAILFATHOM_IMAP_CA_FILE if set."""
    context = ssl.create_default_context()
    extra = settings.MAILFATHOM.imap_ca_file
    if extra:
        context.load_verify_locations(cafile=extra)
    return context


class LoginDisabled(Exception):
    """The server refuses passwords on this connection (it advertises LOGINDISABLED)."""


def open_client(
    account: MailAccount,
    *,
    timeout: float = 30.0,
    ssl_context: ssl.SSLContext | None = None,
    password: str | None = None,
) -> IMAPClient:
    """Connect, secure and log in; the caller owns the session and must log out.

    `password` defaults to the account's stored credential. Raises LoginDisabled, or the
    socket, ssl and imapclient exceptions as they come: callers classify them.
    """
    context = ssl_context or tls_context()
    implicit_tls = account.security == Security.TLS
    client = IMAPClient(
        account.imap_host,
        port=account.imap_port,
        ssl=implicit_tls,
        ssl_context=context if implicit_tls else None,
        timeout=timeout,
    )
    try:
        if account.security == Security.STARTTLS:
            client.starttls(context)
        if client.has_capability("LOGINDISABLED"):
            raise LoginDisabled
        client.login(account.username, account.get_credential() if password is None else password)
    except BaseException:
        try:
            client.shutdown()
        except Exception:  # noqa: S110 (already failing; the original error is what matters)
            pass
        raise
    return client

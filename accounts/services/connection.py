"""Connection test: log in to an account's IMAP server read-only and list its folders.

The only commands sent are CAPABILITY, STARTTLS (when configured), LOGIN, LIST and LOGOUT;
nothing on the server changes. A failure becomes one sentence an operator can act on; the
log records the account identifier and the kind of failure, never a user name, password
or folder name.
"""

from __future__ import annotations

import logging
import socket
import ssl
from dataclasses import dataclass

from django.core.exceptions import ValidationError
from django.db import transaction
from imapclient.exceptions import CapabilityError, IMAPClientError, LoginError

from accounts.models import (
    FolderMapping,
    FolderRole,
    MailAccount,
    Security,
    normalize_alias,
)
from accounts.services.imap import LoginDisabled, open_client
from mailfathom.errors import MailFathomError
from mailfathom.hosts import is_loopback_host

logger = logging.getLogger(__name__)

SPECIAL_USE_ROLES = {
    "\\sent": FolderRole.SENT,
    "\\junk": FolderRole.JUNK,
    "\\drafts": FolderRole.DRAFTS,
    "\\archive": FolderRole.ARCHIVE,
    "\\trash": FolderRole.TRASH,
}


@dataclass(frozen=True)
class RemoteFolder:
    name: str  # decoded from modified UTF-7
    flags: tuple[str, ...]
    suggested_role: str  # a FolderRole value, or "" for none
    suggested_alias: str

    @property
    def selectable(self) -> bool:
        """Whether the folder can hold messages (not \\Noselect or \\NonExistent)."""
        return not {flag.casefold() for flag in self.flags} & {"\\noselect", "\\nonexistent"}


@dataclass(frozen=True)
class ConnectionReport:
    ok: bool
    message: str
    folders: tuple[RemoteFolder, ...] = ()


# One sentence per kind of failure; {where} is host:port, {detail} the certificate problem.
SENTENCES = {
    "no_credential": "No password is stored for this account; enter one and save the account first.",
    "plain_refused": "Unencrypted IMAP is allowed only for a loopback host; choose STARTTLS or TLS.",
    "credential_unreadable": "The stored password does not decrypt with MAILFATHOM_KEYRING; enter it again.",
    "timeout": "The server at {where} did not answer in time; check the host, port and firewall.",
    "tls_certificate": "The TLS certificate of {where} is not trusted for this host name ({detail}).",
    "tls_handshake": "The TLS handshake with {where} failed; check the port matches the chosen security.",
    "dns": "The host name {host} could not be resolved; check the IMAP host.",
    "refused": "Nothing accepted the connection at {where}; check the IMAP host and port.",
    "login_refused": "The server refused the login; check the IMAP user name and the stored password.",
    "login_disabled": "The server refuses passwords on an unencrypted connection; choose STARTTLS or TLS.",
    "starttls_missing": "The server at {where} does not offer STARTTLS; choose implicit TLS instead.",
    "unreachable": "The server at {where} could not be reached or closed the connection.",
    "unexpected": "The server answered in a way MailFathom did not expect.",
}
# Checked in order: the first class an error is an instance of decides its kind.
_KINDS: list[tuple[type[BaseException], str]] = [
    (TimeoutError, "timeout"),
    (ssl.SSLCertVerificationError, "tls_certificate"),
    (ssl.SSLError, "tls_handshake"),
    (socket.gaierror, "dns"),
    (ConnectionRefusedError, "refused"),
    (LoginError, "login_refused"),
    (CapabilityError, "starttls_missing"),
    (OSError, "unreachable"),
]


class _Failure(Exception):
    def __init__(self, kind: str) -> None:
        super().__init__(kind)
        self.kind = kind


def _as_text(value: bytes | str | None) -> str:
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    return value or ""


def _remote_folder(name: str, flags: tuple[str, ...], delimiter: str) -> RemoteFolder:
    """Describe one listed folder with the role and alias MailFathom suggests for it."""
    special = [SPECIAL_USE_ROLES[flag.casefold()] for flag in flags if flag.casefold() in SPECIAL_USE_ROLES]
    role = FolderRole.INBOX.value if name.casefold() == "inbox" else (special[0].value if special else "")
    last = name.rsplit(delimiter, 1)[-1] if delimiter else name
    return RemoteFolder(name=name, flags=flags, suggested_role=role, suggested_alias=normalize_alias(last))


def _kind(error: BaseException) -> str:
    if isinstance(error, _Failure):
        return error.kind
    return next((kind for error_class, kind in _KINDS if isinstance(error, error_class)), "unexpected")


def _list(account: MailAccount, password: str, timeout: float, context: ssl.SSLContext) -> list[RemoteFolder]:
    try:
        client = open_client(account, timeout=timeout, ssl_context=context, password=password)
    except LoginDisabled:
        raise _Failure("login_disabled") from None
    try:
        listed = client.list_folders()
    except BaseException:
        try:
            client.shutdown()
        except Exception:  # noqa: S110 - already failing; the first error is the one reported
            pass
        raise
    try:
        client.logout()
    except (IMAPClientError, OSError):
        pass  # the folders are read; a failed goodbye changes nothing
    return [
        _remote_folder(_as_text(name), tuple(_as_text(flag) for flag in flags), _as_text(delimiter))
        for flags, delimiter, name in listed
    ]


def test_connection(
    account: MailAccount,
    *,
    timeout: float = 15.0,
    ssl_context: ssl.SSLContext | None = None,
) -> ConnectionReport:
    """Log in to `account`'s IMAP server and list its folders, changing nothing there.

    `timeout` bounds the connection and every read, in seconds. `ssl_context` verifies the
    server's certificate (default: the system's trusted authorities, host name checked).
    Never raises for a server-side or network problem: the report says what went wrong.
    """
    where = f"{account.imap_host}:{account.imap_port}"
    try:
        if not account.has_credential:
            raise _Failure("no_credential")
        if account.security == Security.NONE and not is_loopback_host(account.imap_host):
            raise _Failure("plain_refused")
        try:
            password = account.get_credential()
        except MailFathomError:
            raise _Failure("credential_unreadable") from None
        folders = _list(account, password, timeout, ssl_context or ssl.create_default_context())
    except Exception as error:  # every failure becomes a sentence; the details stay here
        kind = _kind(error)
        # The exception's class only: its message could quote the server's reply.
        logger.info(
            "IMAP connection test failed: account_id=%s host=%s kind=%s (%s)",
            account.account_id,
            account.imap_host,
            kind,
            type(error).__name__,
        )
        detail = getattr(error, "verify_message", "")
        return ConnectionReport(
            False, SENTENCES[kind].format(where=where, host=account.imap_host, detail=detail)
        )
    return ConnectionReport(
        True, f"Logged in to {where}; the server lists {len(folders)} folders.", tuple(folders)
    )


test_connection.__test__ = False  # type: ignore[attr-defined]  # a use case, not a pytest test


def apply_suggested_mappings(account: MailAccount, chosen: list[tuple[str, str, str]]) -> int:
    """Create the folder mappings (remote_name, alias, role) that `account` lacks; return how many.

    A row is skipped when its alias or remote folder is already mapped for the account, when
    its role is already carried by another folder (at most one folder per role), or when it
    does not validate (blank alias, unknown role, ...). All rows are written in one transaction.
    """
    created = 0
    with transaction.atomic():
        locked = MailAccount.objects.select_for_update().get(pk=account.pk)  # one apply at a time
        existing = list(
            FolderMapping.objects.filter(account=locked).values_list("alias", "remote_name", "role")
        )
        aliases = {alias for alias, _, _ in existing}
        remotes = {remote for _, remote, _ in existing}
        roles = {role for _, _, role in existing if role}
        for remote_name, alias, role in chosen:
            mapping = FolderMapping(
                account=locked, remote_name=remote_name, alias=normalize_alias(alias), role=role
            )
            if mapping.alias in aliases or remote_name in remotes or (role and role in roles):
                continue
            try:
                mapping.full_clean()
            except ValidationError:
                continue
            mapping.save()
            aliases.add(mapping.alias)
            remotes.add(remote_name)
            if role:
                roles.add(role)
            created += 1
    return created

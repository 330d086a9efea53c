"""Connection test: log in to an account's IMAP server read-only and list its folders.

The only commands sent are CAPABILITY, STARTTLS (when configured), LOGIN (or, for an OAuth
2.0 account, AUTHENTICATE with its access token), LIST, STATUS (MESSAGES, for the first
STATUS_LIMIT selectable folders) and LOGOUT; nothing on the server changes. The stored
password and the access token go only to the host, port, security and user name saved
with the account; the host is reached through the same address rule
and TLS context as synchronization (accounts.services.imap). Until an IMAP greeting is
read, every failure is the same sentence, so the test cannot tell a closed port from a
silent or a non-IMAP one. The log records the account identifier and the kind of failure,
never a host, user name, password or folder name; a provider's refusal is reported as its
code's sentence, never in the server's words. See docs/operations/accounts.md.
"""

from __future__ import annotations

import logging
import ssl
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import NamedTuple

from django.core.exceptions import ValidationError
from django.db import transaction
from imapclient import IMAPClient
from imapclient.exceptions import CapabilityError, IMAPClientError, LoginError

from accounts.models import (
    AuthMethod,
    FolderMapping,
    FolderRole,
    MailAccount,
    Security,
    normalize_alias,
)
from accounts.services import imap
from accounts.services.provider_refusals import recognize_error
from mailfathom.core.errors import Code, MailFathomError
from mailfathom.core.hosts import is_loopback_host

logger = logging.getLogger(__name__)

SPECIAL_USE_ROLES = {
    "\\sent": FolderRole.SENT,
    "\\junk": FolderRole.JUNK,
    "\\drafts": FolderRole.DRAFTS,
    "\\archive": FolderRole.ARCHIVE,
    "\\trash": FolderRole.TRASH,
}


class Endpoint(NamedTuple):
    """Where a password is sent: the four settings a stored credential is bound to."""

    host: str
    port: int
    security: str
    username: str

    @classmethod
    def of(cls, account: MailAccount) -> Endpoint:
        return cls(account.imap_host, account.imap_port, account.security, account.username)

    def differences(self, saved: Endpoint) -> list[str]:
        """The labels of the settings that differ from `saved` (host names compared case-blind)."""
        same = {
            "host": self.host.casefold() == saved.host.casefold(),
            "port": self.port == saved.port,
            "security": self.security == saved.security,
            "username": self.username == saved.username,
        }
        return [ENDPOINT_LABELS[name] for name, equal in same.items() if not equal]


# The admin form's labels, so a message names the field the operator sees.
ENDPOINT_LABELS = {
    "host": "IMAP host",
    "port": "IMAP port",
    "security": "security",
    "username": "IMAP user name",
}


# STATUS is one round trip per folder; past this many folders the counts are left out.
STATUS_LIMIT = 200

# What a LIST flag tells an operator, in words; flags about the folder tree alone are left out.
FLAG_WORDS = {
    "\\inbox": "Inbox",
    "\\sent": "Sent mail",
    "\\drafts": "Drafts",
    "\\junk": "Junk",
    "\\trash": "Trash",
    "\\archive": "Archive",
    "\\all": "All mail (a view of every folder)",
    "\\flagged": "Flagged mail (a view)",
    "\\important": "Important mail (a view)",
    "\\noselect": "Holds no mail (a parent only)",
    "\\nonexistent": "Holds no mail (does not exist)",
}
TREE_FLAGS = {"\\haschildren", "\\hasnochildren", "\\marked", "\\unmarked", "\\subscribed", "\\remote"}


@dataclass(frozen=True)
class RemoteFolder:
    name: str  # decoded from modified UTF-7
    flags: tuple[str, ...]
    suggested_role: str  # a FolderRole value, or "" for none
    suggested_alias: str
    messages: int | None = None  # STATUS MESSAGES; None when not asked or not answered

    @property
    def selectable(self) -> bool:
        """Whether the folder can hold messages (not \\Noselect or \\NonExistent)."""
        return not {flag.casefold() for flag in self.flags} & {"\\noselect", "\\nonexistent"}

    @property
    def described(self) -> str:
        """The flags in words ("Sent mail"); a flag with no words is shown as the server wrote it."""
        words = []
        for flag in self.flags:
            folded = flag.casefold()
            if folded in TREE_FLAGS:
                continue
            words.append(FLAG_WORDS.get(folded, flag))
        return ", ".join(dict.fromkeys(words))


@dataclass(frozen=True)
class ConnectionReport:
    ok: bool
    message: str
    folders: tuple[RemoteFolder, ...] = ()
    kind: str = "ok"  # a key of SENTENCES when not ok
    code: int | None = None  # the failure's 61xxx code; for "provider_refusal", the sentence's own


# One sentence per kind of failure. None names a host or port: the page shows what was tested.
SENTENCES = {
    "password_needed": (
        "The {fields} differ from the saved account, and the stored password is only sent to "
        "the server and user name it was saved for: enter the IMAP password to test these settings."
    ),
    "token_needs_saved_settings": (
        "The {fields} differ from the saved account, and the account's access token is only "
        "presented to the server and user name it was issued for: save the settings first, or "
        "enter an IMAP password to test these settings with it."
    ),
    "no_credential": "No password is stored for this account; enter one and save the account first.",
    "plain_refused": "Unencrypted IMAP is allowed only for a loopback host; choose STARTTLS or TLS.",
    "credential_unreadable": "The stored password does not decrypt with MAILFATHOM_KEYRING; enter it again.",
    "destination_refused": (
        "The IMAP host is, or resolves to, a link-local, unspecified or multicast address, which "
        "MailFathom never connects to; use the mail server's own name or address."
    ),
    # Before a greeting: refused, silent, not TLS, not IMAP, unresolvable all read the same.
    "unreachable": (
        "Could not reach an IMAP server at that host and port; check the host, the port, the "
        "security setting, and that no firewall blocks the way."
    ),
    # After a greeting (or a greeting read to prove an IMAP server is there):
    "tls_certificate": (
        "The IMAP server's TLS certificate is not trusted ({detail}); if your own certificate "
        "authority signed it, give that authority's certificate (PEM) in the account's "
        '"IMAP server\'s CA certificate" field, or deployment-wide in MAILFATHOM_IMAP_CA_FILE.'
    ),
    "tls_handshake": "The IMAP server answered, but the TLS negotiation after STARTTLS failed.",
    "login_refused": "The server refused the login; check the IMAP user name and the stored password.",
    "login_disabled": "The server refuses passwords on an unencrypted connection; choose STARTTLS or TLS.",
    "starttls_missing": "The IMAP server does not offer STARTTLS; choose implicit TLS instead.",
    "timeout": "The IMAP server answered, then stopped answering before the test finished.",
    "closed": "The IMAP server closed the connection before the test finished.",
    "unexpected": "The server answered in a way MailFathom did not expect.",
    # A provider's known refusal or limit, or no access token to be had: the code's sentence
    # (mailfathom.core.errors.Code, 61010-61021), never the server's words.
    "provider_refusal": "{detail}",
}
# The synchronization code each kind of failure shares (mailfathom.core.errors.Code), so the
# test and a folder's last error name one problem with one number.
KIND_CODES = {
    "unreachable": Code.CANNOT_CONNECT,
    "destination_refused": Code.CANNOT_CONNECT,
    "tls_certificate": Code.TLS_FAILED,
    "tls_handshake": Code.TLS_FAILED,
    "starttls_missing": Code.TLS_FAILED,
    "login_refused": Code.LOGIN_REFUSED,
    "login_disabled": Code.LOGIN_REFUSED,
    "timeout": Code.TIMED_OUT,
    "closed": Code.CONNECTION_LOST,
    "unexpected": Code.UNEXPECTED_ANSWER,
}
# After the greeting, checked in order: the first class an error is an instance of decides.
_KINDS: list[tuple[type[BaseException], str]] = [
    (TimeoutError, "timeout"),
    (ssl.SSLCertVerificationError, "tls_certificate"),
    (ssl.SSLError, "tls_handshake"),
    (LoginError, "login_refused"),
    (CapabilityError, "starttls_missing"),
    (OSError, "closed"),
    (EOFError, "closed"),
]


class _Failure(Exception):
    def __init__(self, kind: str, detail: str = "") -> None:
        super().__init__(kind)
        self.kind = kind
        self.detail = detail


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


def _refusal(error: BaseException) -> Code | None:
    """The code of a provider's refusal (ProviderRefusal, SignInRefused, or a refusal's wording)."""
    code = getattr(error, "code", None)
    if isinstance(error, LoginError) and isinstance(code, Code):
        return code
    if isinstance(error, IMAPClientError):
        known = recognize_error(error)
        return known.code if known is not None else None
    return None


def _kind(error: BaseException) -> str:
    if isinstance(error, _Failure):
        return error.kind
    if _refusal(error) is not None:
        return "provider_refusal"
    return next((kind for error_class, kind in _KINDS if isinstance(error, error_class)), "unexpected")


def _greet(target: MailAccount, timeout: float, context: ssl.SSLContext) -> IMAPClient:
    """Connect and read the greeting; any failure before it is one kind, "unreachable"."""
    try:
        addresses = imap.resolve(target.imap_host, target.imap_port)
    except imap.DestinationRefused:
        raise _Failure("destination_refused") from None
    except OSError as error:  # the name does not resolve
        raise _Failure("unreachable") from error
    try:
        return imap.connect(target, timeout=timeout, ssl_context=context, addresses=addresses)
    except ssl.SSLCertVerificationError as error:
        # Name the certificate only when an IMAP server stands behind it.
        if imap.greets_as_imap(addresses, implicit_tls=True, timeout=timeout):
            raise _Failure("tls_certificate", error.verify_message or "") from error
        raise _Failure("unreachable") from error
    except Exception as error:  # refused, silent, not TLS, not IMAP: no greeting was read
        raise _Failure("unreachable") from error


def _list(target: MailAccount, password: str | None, timeout: float) -> list[RemoteFolder]:
    """Log in and list; `password` None presents the (saved OAuth 2.0) account's access token."""
    context = imap.tls_context(target)  # the one builder synchronization uses too
    client = _greet(target, timeout, context)
    try:
        imap.log_in(client, target, password=password, ssl_context=context)
    except imap.LoginDisabled:
        raise _Failure("login_disabled") from None
    except ssl.SSLCertVerificationError as error:
        raise _Failure("tls_certificate", error.verify_message or "") from error
    try:
        listed = client.list_folders()
        folders = [
            _remote_folder(_as_text(name), tuple(_as_text(flag) for flag in flags), _as_text(delimiter))
            for flags, delimiter, name in listed
        ]
        folders = _with_counts(client, folders)
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
    return folders


def _with_counts(client: IMAPClient, folders: list[RemoteFolder]) -> list[RemoteFolder]:
    """Ask STATUS (MESSAGES) of the first STATUS_LIMIT selectable folders; a refusal leaves None."""
    counted = []
    asked = 0
    for folder in folders:
        messages = None
        if folder.selectable and asked < STATUS_LIMIT:
            asked += 1
            try:
                messages = int(client.folder_status(folder.name, [b"MESSAGES"])[b"MESSAGES"])
            except (IMAPClientError, KeyError, ValueError):
                messages = None  # this folder's count only; the listing stands
        counted.append(replace(folder, messages=messages))
    return counted


def _joined(labels: list[str]) -> str:
    return " and ".join([", ".join(labels[:-1]), labels[-1]] if len(labels) > 1 else labels)


def _password(account: MailAccount, endpoint: Endpoint) -> str:
    """The stored password, if `endpoint` is where it was saved for; else a _Failure."""
    changed = endpoint.differences(Endpoint.of(account))
    if changed:
        raise _Failure("password_needed", _joined(changed))
    if not account.has_credential:
        raise _Failure("no_credential")
    try:
        return account.get_credential()
    except MailFathomError:
        raise _Failure("credential_unreadable") from None


def test_connection(
    account: MailAccount,
    *,
    endpoint: Endpoint | None = None,
    password: str | None = None,
    timeout: float = 15.0,
) -> ConnectionReport:
    """Log in to an IMAP server for `account` and list its folders, changing nothing there.

    `endpoint` is what to test (default: the saved account's settings). Without a typed
    `password`, the stored one is used (for an OAuth 2.0 account, its access token), and
    only when `endpoint` equals the saved settings; otherwise the report asks for the
    password and nothing is connected. `timeout` bounds
    the connection and every read, in seconds. Certificates are checked with the TLS
    context synchronization uses (MAILFATHOM_IMAP_CA_FILE included). Never raises for a
    server-side or network problem: the report says what went wrong.
    """
    endpoint = endpoint or Endpoint.of(account)
    # An unsaved stand-in carrying no credential: only `password` can be sent through it.
    target = MailAccount(
        account_id=account.account_id,
        imap_host=endpoint.host,
        imap_port=endpoint.port,
        security=endpoint.security,
        username=endpoint.username,
        imap_ca_pem=account.imap_ca_pem,  # the account's own CA: a certificate, no credential
    )
    try:
        secret: str | None
        if account.auth_method == AuthMethod.OAUTH2 and not password:
            changed = endpoint.differences(Endpoint.of(account))
            if changed:
                raise _Failure("token_needs_saved_settings", _joined(changed))
            target, secret = account, None  # the saved account: its grant holds the token
        else:
            secret = password or _password(account, endpoint)
        if endpoint.security == Security.NONE and not is_loopback_host(endpoint.host):
            raise _Failure("plain_refused")
        folders = _list(target, secret, timeout)
    except Exception as error:  # every failure becomes a sentence; the details stay here
        kind = _kind(error)
        refusal = None if isinstance(error, _Failure) else _refusal(error)
        known = refusal if refusal is not None else KIND_CODES.get(kind)
        code = int(known) if known is not None else None
        logger.info(
            "IMAP connection test failed: account_id=%s kind=%s code=%s", account.account_id, kind, code
        )
        # The exception's class only: its message could quote the server's reply or the host.
        cause = error.__cause__ if isinstance(error, _Failure) and error.__cause__ else error
        logger.debug("IMAP connection test failure cause: %s", type(cause).__name__)
        detail = error.detail if isinstance(error, _Failure) else refusal.sentence if refusal else ""
        message = SENTENCES[kind].format(fields=detail, detail=detail)
        return ConnectionReport(False, message, kind=kind, code=code)
    where = f"{endpoint.host}:{endpoint.port}"
    return ConnectionReport(
        True, f"Logged in to {where}; the server lists {len(folders)} folders.", tuple(folders)
    )


test_connection.__test__ = False  # type: ignore[attr-defined]  # a use case, not a pytest test


# A row of the mapping page: remote name, alias, role, and optionally visible to tools.
MappingRow = tuple[str, str, str] | tuple[str, str, str, bool]

# Roles mapped hidden from tools unless the operator ticks them: Junk holds mail anyone on the
# internet wrote (the likeliest carrier of instructions aimed at an assistant), Trash mail
# someone chose to throw away. docs/operations/accounts.md says so in words.
HIDDEN_ROLES = frozenset({FolderRole.JUNK.value, FolderRole.TRASH.value})


def apply_suggested_mappings(account: MailAccount, chosen: Sequence[MappingRow]) -> int:
    """Create the folder mappings (remote_name, alias, role[, visible]) `account` lacks; return how many.

    A row is skipped when its alias or remote folder is already mapped for the account, when
    its role is already carried by another folder (at most one folder per role), or when it
    does not validate (blank alias, unknown role, ...). All rows are written in one transaction.
    A row without its fourth element is visible to tools unless its role is in HIDDEN_ROLES.
    """
    return len(_create_mappings(account, chosen))


def visible_by_default(role: str) -> bool:
    return role not in HIDDEN_ROLES


def _create_mappings(account: MailAccount, chosen: Sequence[MappingRow]) -> list[FolderMapping]:
    created: list[FolderMapping] = []
    with transaction.atomic():
        locked = MailAccount.objects.select_for_update().get(pk=account.pk)  # one apply at a time
        existing = list(
            FolderMapping.objects.filter(account=locked).values_list("alias", "remote_name", "role")
        )
        aliases = {alias for alias, _, _ in existing}
        remotes = {remote for _, remote, _ in existing}
        roles = {role for _, _, role in existing if role}
        for row in chosen:
            remote_name, alias, role = row[0], row[1], row[2]
            visible = row[3] if len(row) > 3 else visible_by_default(role)
            mapping = FolderMapping(
                account=locked,
                remote_name=remote_name,
                alias=normalize_alias(alias),
                role=role,
                visible_to_tools=bool(visible),
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
            created.append(mapping)
    return created


def suggested_rows(account: MailAccount, report: ConnectionReport) -> list[MappingRow]:
    """The folders to map in one step: INBOX and those with a SPECIAL-USE role, not yet mapped.

    A role the account already maps, a folder already mapped and a folder that holds no mail
    are left out; Junk and Trash are hidden from tools (HIDDEN_ROLES).
    """
    mapped = FolderMapping.objects.filter(account=account)
    taken_roles = set(mapped.exclude(role="").values_list("role", flat=True))
    mapped_names = set(mapped.values_list("remote_name", flat=True))
    rows: list[MappingRow] = []
    for folder in report.folders:
        role = folder.suggested_role
        if not role or role in taken_roles or folder.name in mapped_names or not folder.selectable:
            continue
        taken_roles.add(role)
        rows.append((folder.name, folder.suggested_alias, role, visible_by_default(role)))
    return rows


@dataclass(frozen=True)
class MappedFolder:
    alias: str
    remote_name: str
    role: str
    visible_to_tools: bool
    messages: int | None


def test_and_map(
    account: MailAccount, *, timeout: float = 15.0
) -> tuple[ConnectionReport, list[MappedFolder]]:
    """Test the saved settings and, when the login works, map the suggested folders in one step.

    Returns the report and the mappings created (none when the test failed, or when every
    suggested folder was already mapped).
    """
    report = test_connection(account, timeout=timeout)
    if not report.ok:
        return report, []
    counts = {folder.name: folder.messages for folder in report.folders}
    created = _create_mappings(account, suggested_rows(account, report))
    return report, [
        MappedFolder(m.alias, m.remote_name, m.role, m.visible_to_tools, counts.get(m.remote_name))
        for m in created
    ]


test_and_map.__test__ = False  # type: ignore[attr-defined]  # a use case, not a pytest test

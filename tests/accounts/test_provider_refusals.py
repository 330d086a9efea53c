"""Providers' refusals and limits, in their exact IMAP wordings, become codes everywhere.

Against a scripted server that greets and answers like Microsoft or Google
(tests/accounts/provider_imap.py): opening a session raises ProviderRefusal with the code,
a synchronization run records the code on the account's folders (a limit with the
provider's pause, not the exponential backoff), and the admin's connection test shows the
code's sentence. The server's words appear in no error, report or log line.
"""

from __future__ import annotations

import logging
import uuid
from dataclasses import dataclass
from datetime import timedelta

import pytest
from django.utils import timezone

from accounts import crypto
from accounts.models import AuthMethod, FolderRole, GrantState, OAuthGrant, OAuthRegistration, Security
from accounts.services import connection, oauth_tokens, provider_refusals
from accounts.services.imap import close_client, open_client
from accounts.services.provider_refusals import ProviderRefusal, recognize
from mailbox.models import Folder
from mailbox.sync.engine import synchronize_account
from mailfathom.core.errors import Code
from tests.accounts.provider_imap import GOOGLE, MICROSOFT, ProviderIMAP, Script, provider_imap
from tests.factories import FolderMappingFactory, MailAccountFactory

pytestmark = pytest.mark.django_db

MICROSOFT_BACKOFF = timedelta(milliseconds=299910)
MICROSOFT_THROTTLED = "{tag} NO Request is throttled. Suggested Backoff Time: 299910 milliseconds"
GOOGLE_OVERQUOTA = "{tag} NO [OVERQUOTA] Account exceeded command or bandwidth limits. (Failure)"
MICROSOFT_NOT_CONNECTED = [
    "{tag} BAD User is authenticated but not connected.",
    "* BYE Connection closed. 14",
]


@dataclass(frozen=True)
class Wording:
    name: str
    script: Script
    code: Code
    words: tuple[str, ...]  # the server's words, which must never come back out
    pause: timedelta | None = None
    oauth: bool = False


# Refused at sign-in: open_client, synchronization and the connection test all meet them.
AT_SIGN_IN = [
    Wording(
        "microsoft-basic-authentication-disabled",
        Script(
            MICROSOFT,
            login=["{tag} NO Basic authentication is disabled.", "* BYE Connection is closed. 13"],
        ),
        Code.PASSWORDS_REFUSED,
        ("Basic authentication is disabled",),
    ),
    Wording(
        "google-application-specific-password",
        Script(
            GOOGLE,
            login=[
                "{tag} NO [ALERT] Application-specific password required: "
                "https://support.google.com/accounts/answer/185833 (Failure)"
            ],
        ),
        Code.APP_PASSWORD_REQUIRED,
        ("Application-specific", "support.google.com", "(Failure)"),
    ),
    Wording(
        "google-web-login-required",
        Script(
            GOOGLE,
            login=[
                "* NO [WEBALERT https://accounts.google.com/signin/continue?sarp=1&scc=1&plt=AKgnsbt] "
                "Web login required.",
                "{tag} NO [ALERT] Please log in via your web browser: "
                "https://support.google.com/mail/accounts/answer/78754 (Failure)",
            ],
        ),
        Code.WEB_LOGIN_REQUIRED,
        ("Please log in via your web browser", "WEBALERT", "accounts.google.com", "78754"),
    ),
    Wording(
        "google-imap-not-enabled",
        Script(
            GOOGLE,
            login=[
                "{tag} NO [ALERT] Your account is not enabled for IMAP use. Please visit your Gmail "
                "settings page and enable your account for IMAP access. (Failure)"
            ],
        ),
        Code.IMAP_SWITCHED_OFF,
        ("not enabled for IMAP use", "Gmail settings page"),
    ),
    Wording(
        "microsoft-throttled-at-login",
        Script(MICROSOFT, login=[MICROSOFT_THROTTLED]),
        Code.PROVIDER_LIMIT,
        ("throttled", "299910", "Backoff"),
        pause=MICROSOFT_BACKOFF,
    ),
    Wording(
        "google-too-many-connections",
        Script(GOOGLE, login=["{tag} NO [ALERT] Too many simultaneous connections. (Failure)"]),
        Code.PROVIDER_LIMIT,
        ("simultaneous connections", "(Failure)"),
        pause=timedelta(minutes=5),
    ),
    Wording(
        "microsoft-token-refused-twice",
        Script(MICROSOFT, authenticate=["{tag} NO AUTHENTICATE failed."]),
        Code.TOKEN_REFUSED,
        ("AUTHENTICATE failed",),
        oauth=True,
    ),
]

# Accepted sign-in, then the first command that opens the mailbox is refused: open_client
# succeeds (it opens nothing), synchronization and the connection test's LIST meet it.
AFTER_SIGN_IN = [
    Wording(
        "microsoft-authenticated-but-not-connected",
        Script(MICROSOFT, after_sign_in=MICROSOFT_NOT_CONNECTED),
        Code.MAILBOX_NOT_CONNECTED,
        ("authenticated but not connected", "Connection closed"),
        oauth=True,
    ),
]

# Limits on FETCH, after a successful sign-in and EXAMINE: only synchronization fetches.
ON_FETCH = [
    Wording(
        "microsoft-throttled-on-fetch",
        Script(MICROSOFT, fetch=[MICROSOFT_THROTTLED]),
        Code.PROVIDER_LIMIT,
        ("throttled", "299910"),
        pause=MICROSOFT_BACKOFF,
    ),
    Wording(
        "google-overquota-on-fetch",
        Script(GOOGLE, fetch=[GOOGLE_OVERQUOTA]),
        Code.PROVIDER_LIMIT,
        ("OVERQUOTA", "bandwidth limits"),
        pause=timedelta(hours=1),
    ),
]


def _ids(wordings: list[Wording]) -> list[str]:
    return [wording.name for wording in wordings]


@pytest.fixture
def fresh_token_endpoint(monkeypatch) -> list[str]:
    """Stand in for the authorization server's token endpoint: each refresh issues "t2", "t3"...

    These tests are about the IMAP server's words; a real authorization server is what the
    OAuth sign-in tests run against. Yields the tokens issued, in order.
    """
    issued: list[str] = []

    def fetch(registration, grant, now):
        issued.append(f"t{len(issued) + 2}")
        return oauth_tokens.Issued(issued[-1], now + timedelta(hours=1), "", "")

    monkeypatch.setattr(oauth_tokens, "_fetch", fetch)
    return issued


def _account(server: ProviderIMAP, wording: Wording, *remote_names: str):
    """An account on `server` mapping `remote_names`; an OAuth one holds a fresh token "t1"."""
    fields = {"imap_host": server.host, "imap_port": server.port, "security": Security.NONE}
    if wording.oauth:
        registration = OAuthRegistration.objects.create(
            name=f"registration-{uuid.uuid4().hex[:8]}",
            provider="generic_app",
            client_id="mailfathom",
            issuer_url="http://127.0.0.1:9/",
        )
        account = MailAccountFactory(
            username="mailbox@example.com",
            auth_method=AuthMethod.OAUTH2,
            oauth_registration=registration,
            **fields,
        )
        OAuthGrant.objects.create(
            account=account,
            state=GrantState.ACTIVE,
            access_token_encrypted=crypto.encrypt("t1"),
            access_expires_at=timezone.now() + timedelta(hours=1),
            refresh_token_encrypted=crypto.encrypt("r1"),
        )
    else:
        account = MailAccountFactory(username="mailbox@example.com", **fields)
        account.set_credential("a-password")
        account.save()
    roles = {"INBOX": FolderRole.INBOX, "Sent": FolderRole.SENT}
    for name in remote_names:
        FolderMappingFactory(account=account, alias=name.lower(), remote_name=name, role=roles[name])
    return account


def _our_log(caplog) -> str:
    """What MailFathom's own loggers wrote (imapclient's debug log is the library's)."""
    ours = ("accounts", "mailbox", "mailfathom")
    return "\n".join(r.getMessage() for r in caplog.records if r.name.split(".")[0] in ours)


def _assert_in_code_words(text: str, wording: Wording) -> None:
    for words in wording.words:
        assert words not in text


@pytest.mark.parametrize("wording", AT_SIGN_IN, ids=_ids(AT_SIGN_IN))
def test_opening_a_session_raises_the_refusal_as_its_code(wording, fresh_token_endpoint):
    with provider_imap(wording.script) as server:
        account = _account(server, wording)
        with pytest.raises(ProviderRefusal) as raised:
            open_client(account, timeout=10)

    assert raised.value.code == wording.code
    assert raised.value.pause == wording.pause
    assert str(raised.value) == wording.code.sentence
    _assert_in_code_words(str(raised.value), wording)
    assert raised.value.__cause__ is None and raised.value.__suppress_context__


def test_a_refused_token_is_retried_once_with_a_fresh_one(fresh_token_endpoint):
    wording = AT_SIGN_IN[-1]
    with provider_imap(wording.script) as server:
        account = _account(server, wording)
        with pytest.raises(ProviderRefusal):
            open_client(account, timeout=10)

    assert server.tokens == ["t1", "t2"]  # once as held, once freshly issued, then no more
    assert fresh_token_endpoint == ["t2"]
    assert server.commands.count("AUTHENTICATE") == 2
    assert OAuthGrant.objects.get(account=account).access_token() == "t2"


@pytest.mark.parametrize("wording", AFTER_SIGN_IN + ON_FETCH, ids=_ids(AFTER_SIGN_IN + ON_FETCH))
def test_a_refusal_after_sign_in_leaves_opening_the_session_alone(wording):
    with provider_imap(wording.script) as server:
        account = _account(server, wording)
        client = open_client(account, timeout=10)
        close_client(client)

    assert "LOGIN" in server.commands or "AUTHENTICATE" in server.commands


@pytest.mark.parametrize("wording", AT_SIGN_IN, ids=_ids(AT_SIGN_IN))
def test_synchronization_records_a_sign_in_refusal_on_every_folder(wording, fresh_token_endpoint, caplog):
    caplog.set_level(logging.DEBUG)
    with provider_imap(wording.script) as server:
        account = _account(server, wording, "INBOX", "Sent")
        before = timezone.now()
        run = synchronize_account(account.pk, force=True)
        after = timezone.now()

    assert run.failure_code == wording.code
    folders = list(Folder.objects.filter(account=account))
    assert len(folders) == 2
    for folder in folders:
        assert folder.last_failure_code == wording.code
        _assert_backoff(folder, wording, before, after)
    _assert_in_code_words(_our_log(caplog), wording)


@pytest.mark.parametrize("wording", AFTER_SIGN_IN + ON_FETCH, ids=_ids(AFTER_SIGN_IN + ON_FETCH))
def test_synchronization_records_a_refusal_met_inside_the_mailbox(wording, caplog):
    caplog.set_level(logging.DEBUG)
    with provider_imap(wording.script) as server:
        account = _account(server, wording, "INBOX")
        before = timezone.now()
        run = synchronize_account(account.pk, force=True)
        after = timezone.now()

    assert run.failure_code == wording.code
    assert [f.failure_code for f in run.folders] == [wording.code]
    folder = Folder.objects.get(account=account)
    assert folder.last_failure_code == wording.code
    _assert_backoff(folder, wording, before, after)
    if wording in ON_FETCH:
        assert "UID FETCH" in server.commands  # refused on FETCH, after EXAMINE and SEARCH
    _assert_in_code_words(_our_log(caplog), wording)


def _assert_backoff(folder: Folder, wording: Wording, before, after) -> None:
    """A limit waits the provider's pause exactly; anything else backs off exponentially."""
    assert folder.backoff_until is not None
    if wording.pause is not None:
        assert before + wording.pause <= folder.backoff_until <= after + wording.pause
    else:
        assert folder.backoff_until <= after + timedelta(seconds=60)  # first step of next_attempt


@pytest.mark.parametrize("wording", AT_SIGN_IN + AFTER_SIGN_IN, ids=_ids(AT_SIGN_IN + AFTER_SIGN_IN))
def test_the_connection_test_reports_the_codes_sentence(wording, fresh_token_endpoint, caplog):
    caplog.set_level(logging.DEBUG)
    with provider_imap(wording.script) as server:
        account = _account(server, wording)
        report = connection.test_connection(account, timeout=10)

    assert not report.ok
    assert report.kind == "provider_refusal"
    assert report.code == wording.code
    assert report.message == wording.code.sentence
    _assert_in_code_words(_our_log(caplog), wording)
    logged = _our_log(caplog)
    assert f"code={int(wording.code)}" in logged
    for private in ("mailbox@example.com", "a-password", "127.0.0.1", str(server.port)):
        assert private not in logged


def test_the_connection_test_reports_a_sign_in_nobody_made(caplog):
    """An OAuth account whose provider signs people in, with no grant yet: SignInRefused."""
    caplog.set_level(logging.DEBUG)
    with provider_imap(Script(MICROSOFT)) as server:
        account = _account(server, Wording("x", Script(MICROSOFT), Code.SIGN_IN_NEEDED, (), oauth=True))
        OAuthGrant.objects.filter(account=account).delete()
        OAuthRegistration.objects.filter(pk=account.oauth_registration_id).update(
            provider="microsoft", issuer_url=""
        )
        account.refresh_from_db()
        report = connection.test_connection(account, timeout=10)

    assert (report.ok, report.kind, report.code) == (False, "provider_refusal", Code.SIGN_IN_NEEDED)
    assert report.message == Code.SIGN_IN_NEEDED.sentence
    assert "AUTHENTICATE" not in server.commands  # no token, so nothing was presented


def test_the_connection_test_presents_a_token_only_to_the_saved_settings():
    wording = AFTER_SIGN_IN[0]
    with provider_imap(wording.script) as server:
        account = _account(server, wording)
        elsewhere = connection.Endpoint.of(account)._replace(username="someone@example.com")
        report = connection.test_connection(account, endpoint=elsewhere, timeout=10)

    assert (report.ok, report.kind) == (False, "token_needs_saved_settings")
    assert "IMAP user name" in report.message
    assert server.commands == [] and server.tokens == []


def test_the_connection_test_of_an_oauth_account_lists_its_folders():
    wording = Wording("accepted", Script(MICROSOFT), Code.UNDESCRIBED, (), oauth=True)
    with provider_imap(wording.script) as server:
        account = _account(server, wording)
        report = connection.test_connection(account, timeout=10)

    assert report.ok, report.message
    assert [folder.name for folder in report.folders] == ["INBOX"]
    assert server.tokens == ["t1"]


def test_microsofts_named_back_off_is_the_pause():
    known = recognize("a5 NO Request is throttled. Suggested Backoff Time: 299910 milliseconds")
    assert known == provider_refusals.Recognized(Code.PROVIDER_LIMIT, MICROSOFT_BACKOFF)


def test_a_back_off_of_one_millisecond_is_raised_to_thirty_seconds():
    known = recognize("NO Request is throttled. Suggested Backoff Time: 1 milliseconds")
    assert known is not None and known.pause == timedelta(seconds=30)


def test_a_back_off_of_ten_days_is_lowered_to_a_day():
    ten_days = int(timedelta(days=10).total_seconds() * 1000)
    known = recognize(f"NO Request is throttled. Suggested Backoff Time: {ten_days} milliseconds")
    assert known is not None and known.pause == timedelta(hours=24)


@pytest.mark.parametrize(
    "text",
    [
        "a1 NO LOGIN failed.",
        "a1 NO [AUTHENTICATIONFAILED] Invalid credentials (Failure)",
        "a1 NO [UNAVAILABLE] Temporary authentication failure.",
        "",
    ],
)
def test_wording_no_provider_uses_is_not_recognized(text):
    assert recognize(text) is None

"""What providers' IMAP servers say when they refuse or slow down a mailbox, as codes.

Each refusal is recognized by the provider's own wording and becomes one code with one
sentence an operator can act on (mailfathom.core.errors.Code, 61012-61020). The server's
words are matched here and then dropped: only the code is recorded, logged or shown, since
a server's text may echo anything. docs/operations/mailbox-providers.md has the table.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import timedelta

from imapclient.exceptions import LoginError

from mailfathom.core.errors import Code

# Gmail locks IMAP for up to a day past its bandwidth limit and says nothing more exact:
# an hour between attempts keeps the mailbox from being locked again by the retries.
GMAIL_OVERQUOTA_PAUSE = timedelta(hours=1)
GMAIL_CONNECTIONS_PAUSE = timedelta(minutes=5)
# Microsoft names its back-off; one absurdly long or short is kept within these bounds.
SHORTEST_PAUSE = timedelta(seconds=30)
LONGEST_PAUSE = timedelta(hours=24)


@dataclass(frozen=True)
class Refusal:
    code: Code
    pattern: re.Pattern[str]
    who: str  # whose wording, for the docs and tests
    pause: timedelta | None = None  # for PROVIDER_LIMIT: how long to wait when not named


REFUSALS: tuple[Refusal, ...] = (
    Refusal(Code.PASSWORDS_REFUSED, re.compile(r"Basic authentication is disabled", re.I), "Microsoft"),
    Refusal(
        Code.APP_PASSWORD_REQUIRED, re.compile(r"Application-specific password required", re.I), "Google"
    ),
    Refusal(
        Code.WEB_LOGIN_REQUIRED,
        re.compile(r"Web login required|Please log in via your web browser", re.I),
        "Google",
    ),
    Refusal(
        Code.MAILBOX_NOT_CONNECTED, re.compile(r"User is authenticated but not connected", re.I), "Microsoft"
    ),
    Refusal(Code.IMAP_SWITCHED_OFF, re.compile(r"not enabled for IMAP use", re.I), "Google"),
    Refusal(
        Code.PROVIDER_LIMIT,
        re.compile(
            r"Request is throttled\. Suggested Backoff Time: (?P<milliseconds>\d+) milliseconds", re.I
        ),
        "Microsoft",
    ),
    Refusal(
        Code.PROVIDER_LIMIT,
        re.compile(r"\[OVERQUOTA\]|Account exceeded command or bandwidth limits", re.I),
        "Google",
        pause=GMAIL_OVERQUOTA_PAUSE,
    ),
    Refusal(
        Code.PROVIDER_LIMIT,
        re.compile(r"Too many simultaneous connections", re.I),
        "Google",
        pause=GMAIL_CONNECTIONS_PAUSE,
    ),
)


@dataclass(frozen=True)
class Recognized:
    code: Code
    pause: timedelta | None = None  # set for PROVIDER_LIMIT


def recognize(text: str) -> Recognized | None:
    """The refusal a server's answer is, or None for wording no provider is known to use."""
    for refusal in REFUSALS:
        match = refusal.pattern.search(text)
        if match is None:
            continue
        pause = refusal.pause
        named = match.groupdict().get("milliseconds")
        if named is not None:
            pause = min(max(timedelta(milliseconds=int(named)), SHORTEST_PAUSE), LONGEST_PAUSE)
        return Recognized(refusal.code, pause)
    return None


def recognize_error(error: BaseException) -> Recognized | None:
    """As recognize(), for an exception raised while talking to the server."""
    if isinstance(error, ProviderRefusal):
        return Recognized(error.code, error.pause)
    return recognize(str(error))


class ProviderRefusal(LoginError):
    """The server refused the login in a provider's known words (or refused a fresh token).

    A LoginError, so code that treats any refused login alike still does; its text is the
    code's sentence, never the server's words.
    """

    def __init__(self, code: Code, pause: timedelta | None = None) -> None:
        super().__init__(code.sentence)
        self.code = code
        self.pause = pause

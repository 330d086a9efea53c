"""Synchronization failures: internal codes (never shown to MCP callers) and backoff.

A failure is recorded per folder as a code and a time, never as the server's words, which
may quote mail. The codes sit outside the caller category, so a boundary shows 54001.
"""

from __future__ import annotations

import imaplib
import random
import socket
import ssl
import traceback
from datetime import datetime, timedelta

from imapclient.exceptions import IMAPClientAbortError, IMAPClientError, LoginError

from accounts.services.provider_refusals import recognize_error
from mailfathom.core.errors import Code

CANNOT_CONNECT = Code.CANNOT_CONNECT
LOGIN_REFUSED = Code.LOGIN_REFUSED
TIMED_OUT = Code.TIMED_OUT
TLS_FAILED = Code.TLS_FAILED
UNEXPECTED_ANSWER = Code.UNEXPECTED_ANSWER
FOLDER_MISSING = Code.FOLDER_MISSING
LEASE_LOST = Code.LEASE_LOST
CONNECTION_LOST = Code.CONNECTION_LOST
INTERNAL_FAILURE = Code.INTERNAL_FAILURE
PROVIDER_LIMIT = Code.PROVIDER_LIMIT
DOWNLOAD_PACE_SPENT = Code.DOWNLOAD_PACE_SPENT
# Limits that name their end: the folder is paused, not failing (mailbox.services.sync_status).
PAUSE_CODES = frozenset({PROVIDER_LIMIT, DOWNLOAD_PACE_SPENT})
# Signing in and providers' refusals (accounts.services.provider_refusals, oauth_tokens).
SIGN_IN_CODES = frozenset(
    {
        Code.SIGN_IN_NEEDED,
        Code.REGISTRATION_REFUSED,
        Code.PASSWORDS_REFUSED,
        Code.APP_PASSWORD_REQUIRED,
        Code.WEB_LOGIN_REQUIRED,
        Code.TOKEN_REFUSED,
        Code.MAILBOX_NOT_CONNECTED,
        Code.IMAP_SWITCHED_OFF,
        Code.CONSENT_MISSING,
        Code.TOKEN_ENDPOINT_UNAVAILABLE,
    }
)

# What each code means, for operators (the status page, the account list); never the
# server's own words. docs/synchronization.md holds the same table.
SENTENCES: dict[int, str] = {
    code: code.sentence
    for code in (
        CANNOT_CONNECT,
        LOGIN_REFUSED,
        TIMED_OUT,
        TLS_FAILED,
        UNEXPECTED_ANSWER,
        FOLDER_MISSING,
        LEASE_LOST,
        CONNECTION_LOST,
        INTERNAL_FAILURE,
        PROVIDER_LIMIT,
        DOWNLOAD_PACE_SPENT,
        *sorted(SIGN_IN_CODES),
    )
}


def describe(code: int) -> str:
    """The operator's sentence for a failure code, with the code itself."""
    return f"{code}: {SENTENCES.get(code, 'A failure this version does not describe.')}"


BACKOFF_BASE_SECONDS = 60
BACKOFF_MAX_SECONDS = 3600


class LeaseLost(Exception):
    """Another run took this folder's lease; this run must stop writing to it."""


class PaceSpent(Exception):
    """The account's download pace for the day is spent; the folder waits for `resume_at`."""

    def __init__(self, resume_at: datetime) -> None:
        super().__init__("the day's download pace is spent")
        self.resume_at = resume_at


def resume_at(error: BaseException, now: datetime) -> datetime | None:
    """When a folder refused for `error` may be tried again, if the refusal says; else None.

    A provider's limit names its own pause (or has a known one) and the day's pace ends at
    midnight; every other failure backs off exponentially (next_attempt).
    """
    if isinstance(error, PaceSpent):
        return error.resume_at
    if isinstance(error, IMAPClientError | imaplib.IMAP4.error):
        known = recognize_error(error)
        if known is not None and known.pause is not None:
            return now + known.pause
    return None


def classify(error: BaseException) -> int:
    """Map an exception raised while talking to a server onto a failure code."""
    if isinstance(error, LeaseLost):
        return LEASE_LOST
    if isinstance(error, PaceSpent):
        return DOWNLOAD_PACE_SPENT
    code = getattr(error, "code", None)  # oauth_tokens.SignInRefused
    if isinstance(error, LoginError) and isinstance(code, Code) and code in SIGN_IN_CODES:
        return code
    if isinstance(error, IMAPClientError | imaplib.IMAP4.error):
        known = recognize_error(error)  # a provider's refusal or limit, in its own words
        if known is not None:
            return known.code
    if isinstance(error, LoginError):
        return LOGIN_REFUSED
    if isinstance(error, socket.timeout | TimeoutError):
        return TIMED_OUT
    if isinstance(error, ssl.SSLError):
        return TLS_FAILED
    if isinstance(error, IMAPClientAbortError | imaplib.IMAP4.abort | ConnectionError | EOFError):
        return CONNECTION_LOST
    if isinstance(error, OSError):
        return CANNOT_CONNECT
    if isinstance(error, IMAPClientError | imaplib.IMAP4.error):
        return UNEXPECTED_ANSWER
    return INTERNAL_FAILURE


def describe_internal(error: BaseException) -> str:
    """Where an unexpected exception came from, without its message (which may quote mail)."""
    frames = traceback.extract_tb(error.__traceback__)[-4:]
    where = " <- ".join(
        f"{frame.filename.rsplit('/', 1)[-1]}:{frame.lineno} {frame.name}" for frame in reversed(frames)
    )
    return f"{type(error).__name__} at {where}"


def connection_is_dead(code: int) -> bool:
    """Whether the session cannot be used for the next folder after this failure."""
    return (
        code in {CANNOT_CONNECT, LOGIN_REFUSED, TIMED_OUT, TLS_FAILED, CONNECTION_LOST, PROVIDER_LIMIT}
        or code in SIGN_IN_CODES
    )


def next_attempt(now: datetime, consecutive_failures: int) -> datetime:
    """Exponential backoff with jitter, so failing accounts neither hammer nor align."""
    ceiling = min(BACKOFF_BASE_SECONDS * 2 ** max(consecutive_failures - 1, 0), BACKOFF_MAX_SECONDS)
    return now + timedelta(seconds=ceiling * random.uniform(0.5, 1.0))  # noqa: S311 (jitter, not crypto)

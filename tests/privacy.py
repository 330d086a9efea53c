"""A suite-wide check that no log line carries mail content, an address, a query or a token.

Every log record emitted in this test process is kept. After each test that used the
database, the subjects and addresses it stored are collected, and so are the OAuth tokens
(access and refresh) and registrations' client secrets it stored, decrypted; every search
query is collected as it is made. At the end of the session, a log line containing any of them
fails the run. (Processes the tests start, uvicorn and Celery workers, log elsewhere and
are not covered here.) Under pytest-xdist each worker hands its records and values to the
controller, which checks them all together, as one process would.
"""

from __future__ import annotations

import logging
import re

import pytest

MIN_LENGTH = 8  # shorter strings ("inbox", "a@b.c") collide with ordinary log words
# Words of our own that logs carry as codes (attachment extraction's outcomes): a test that
# searches for one, or stores mail titled with one, does not make the code private.
_OUR_CODES = frozenset({"encrypted", "unreadable", "unsupported", "too_large", "timed_out"})

# (the line as logged, its format string): a private value can only arrive through the
# arguments, so a value the format string itself holds ("reference document stored: …")
# is a fixed word of ours, not a leak.
_records: list[tuple[str, str]] = []
_private: set[str] = set()


# Django's request loggers name the request's path ("Not Found: /admin/…/test-connection/"):
# MailFathom's paths are made of identifiers, never of mail, so a private word that happens
# to be a path segment ("connection") is not a leak. Query strings are never logged.
_PATH_LOGGERS = frozenset({"django.request", "django.security.csrf"})


class _Keep(logging.Handler):
    def emit(self, record: logging.LogRecord) -> None:
        if record.name in _PATH_LOGGERS:
            return
        try:
            _records.append((record.getMessage(), str(record.msg)))
        except Exception:  # noqa: S110 (a malformed record is not ours to judge)
            pass


def remember(*values: str) -> None:
    """Mark values as private for this session (tests may call it for their own data)."""
    _private.update(
        value for value in values if value and len(value) >= MIN_LENGTH and value not in _OUR_CODES
    )


_handler = _Keep(level=logging.DEBUG)


def _attached() -> None:
    root = logging.getLogger()
    if _handler not in root.handlers:
        root.addHandler(_handler)


def pytest_configure(config: pytest.Config) -> None:
    _attached()


def pytest_runtest_setup(item: pytest.Item) -> None:
    # A test that builds Django's WSGI or ASGI application runs django.setup() again, whose
    # dictConfig replaces the root logger's handlers: attach ours again before every test.
    _attached()


@pytest.fixture(autouse=True)
def _remember_search_queries(monkeypatch):
    from mailbox.services import search

    checked = search.checked_query

    def recording(query_text: object) -> str:
        if isinstance(query_text, str):
            remember(query_text.strip())
        return checked(query_text)

    monkeypatch.setattr(search, "checked_query", recording)


@pytest.fixture(autouse=True)
def _remember_questions(monkeypatch):
    """ask_mail's questions are private too: no log line may carry one."""
    from answering.services import question

    checked = question.checked_question

    def recording(text: object) -> str:
        if isinstance(text, str):
            remember(text.strip())
        return checked(text)

    monkeypatch.setattr(question, "checked_question", recording)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item: pytest.Item):
    yield
    if item.get_closest_marker("django_db") is None and "db" not in getattr(item, "fixturenames", ()):
        return
    try:
        from mailbox.models import Email, Participant

        rows = Email.objects.values_list("subject", "sender_address")[:5000]
        for subject, sender in rows:
            remember(subject, sender)
        remember(*Participant.objects.values_list("address", flat=True)[:5000])
    except Exception:  # noqa: S110 (a test that broke its connection is reported by itself)
        pass
    _remember_oauth_secrets()


def _remember_oauth_secrets() -> None:
    """OAuth tokens and client secrets are private too: no log line may carry one."""
    try:
        from accounts.models import OAuthGrant, OAuthRegistration

        for grant in OAuthGrant.objects.all()[:1000]:
            remember(grant.access_token(), grant.refresh_token())
        for registration in OAuthRegistration.objects.all()[:1000]:
            remember(registration.get_client_secret())
    except Exception:  # noqa: S110 (a token no key of this test's ring opens is not checkable here)
        pass


def _carries(line: str, value: str) -> bool:
    """Whether `value` stands in `line` as itself, not inside a longer word.

    A subject such as "attachment" is private test data, but "/attachments/" in a request
    line is a path; a leaked subject, address or query appears whole.
    """
    return value in line and re.search(rf"(?<!\w){re.escape(value)}(?!\w)", line) is not None


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node, error) -> None:
    """Under pytest-xdist, gather what each worker logged and stored, to be checked together."""
    output = getattr(node, "workeroutput", {})
    _records.extend((line, template) for line, template in output.get("privacy_records", ()))
    _private.update(output.get("privacy_values", ()))


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    if hasattr(session.config, "workeroutput"):  # an xdist worker: the controller checks
        session.config.workeroutput["privacy_records"] = [list(record) for record in sorted(set(_records))]
        session.config.workeroutput["privacy_values"] = sorted(_private)
        return
    leaks = sorted(
        {
            (value, line[:200])
            for line, template in set(_records)
            for value in _private
            if _carries(line, value) and not _carries(template, value)
        }
    )
    if leaks:
        reporter = session.config.pluginmanager.get_plugin("terminalreporter")
        if reporter:
            reporter.write_line(f"privacy: {len(leaks)} log lines carry private test data:", red=True)
            for value, line in leaks[:20]:
                reporter.write_line(f"  {value!r} in: {line}", red=True)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED

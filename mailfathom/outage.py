"""Telling a dependency outage (the database or Redis unreachable) from a bug, and answering one.

An outage is one of the few exception types a driver raises when it cannot reach its server
(Django's OperationalError and InterfaceError, redis-py's ConnectionError and TimeoutError),
on the exception or its `raise ... from` chain, never on `__context__`, so a bug raised while
handling an outage stays a bug. Every entrypoint answers an outage with 54003 and a hint to
retry (a 503 with Retry-After on the web), logging one warning line instead of a traceback.
"""

from __future__ import annotations

import json
import logging
import sys

import redis
from django.db import InterfaceError, OperationalError
from django.http import HttpRequest, HttpResponse
from django.views import defaults

from mailfathom.core.errors import DEPENDENCY_UNAVAILABLE, DEPENDENCY_UNAVAILABLE_MESSAGE

logger = logging.getLogger("mailfathom.outage")

OUTAGE_TYPES: tuple[type[BaseException], ...] = (
    OperationalError,
    InterfaceError,
    redis.ConnectionError,
    redis.TimeoutError,
)
# What Retry-After says: long enough not to hammer a restarting server, short enough that a
# blip costs a client a few seconds.
RETRY_AFTER_SECONDS = 5

UNAVAILABLE_PAGE = (
    "<!doctype html><html lang='en'><head><meta charset='utf-8'>"
    "<title>MailFathom is temporarily unavailable</title></head><body>"
    "<h1>Temporarily unavailable</h1>"
    f"<p>MailFathom cannot reach its database or Redis right now (error {DEPENDENCY_UNAVAILABLE}). "
    "Nothing was changed. Reload this page in a few seconds; if it persists, "
    "<code>/health</code> names the part that is down.</p></body></html>"
)


def outage_of(error: BaseException | None) -> BaseException | None:
    """The exception on `error`'s `raise ... from` chain saying a dependency is unreachable, or None."""
    seen: set[int] = set()
    while error is not None and id(error) not in seen:
        if isinstance(error, OUTAGE_TYPES):
            return error
        seen.add(id(error))
        error = error.__cause__
    return None


def note(where: str, outage: BaseException) -> None:
    """Log one warning line for an outage: where, and the error type (no message: it names hosts)."""
    logger.warning(
        "%s: dependency unreachable, answered %s: error=%s",
        where,
        DEPENDENCY_UNAVAILABLE,
        type(outage).__name__,
    )


def server_error(request: HttpRequest) -> HttpResponse:
    """Django's handler500: an outage becomes a 503 with Retry-After; anything else is Django's 500.

    The 503 is marked as logged, so Django's request logger writes no traceback for it; the
    one line `note` writes is the record. /api/ paths get the compliance API's body shape.
    """
    outage = outage_of(sys.exc_info()[1])
    if outage is None:
        return defaults.server_error(request)
    note("web", outage)
    if request.path.startswith("/api/"):
        body = json.dumps({"code": DEPENDENCY_UNAVAILABLE, "detail": DEPENDENCY_UNAVAILABLE_MESSAGE})
        response = HttpResponse(
            body, status=DEPENDENCY_UNAVAILABLE.http_status, content_type="application/json"
        )
    else:
        response = HttpResponse(
            UNAVAILABLE_PAGE,
            status=DEPENDENCY_UNAVAILABLE.http_status,
            content_type="text/html; charset=utf-8",
        )
    response["Retry-After"] = str(RETRY_AFTER_SECONDS)
    response["Cache-Control"] = "no-store"
    response._has_been_logged = True  # type: ignore[attr-defined]  # Django's private flag: log_response skips a response already logged
    return response

"""Project-level views: the health endpoint, the API root, the favicon."""

from __future__ import annotations

from django.db import DatabaseError
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.urls import reverse
from django.views.decorators.cache import never_cache

from mailfathom.core.wire import wire_keys, wire_name
from mailfathom.status.health import check_health


@never_cache
def health(request: HttpRequest) -> JsonResponse:
    """Report each part's status and an overall one; 503 when the database or Redis is down.

    Says nothing about mail or accounts (counts and ages only), so it needs no authentication.
    A staff user who may view mail accounts also gets the mailbox sign-in part's accounts by
    identifier (the System status page shows them the same).
    """
    report = check_health(detailed=lambda: may_see_accounts(request))
    body = {
        "status": report.status,
        "parts": {
            wire_name(name): {"status": part.status, "required": part.required, **wire_keys(part.detail)}
            for name, part in report.parts.items()
        },
    }
    response = JsonResponse(body, status=report.http_status)
    # A 503 here is the report doing its job: the part that is down was logged as a warning,
    # so Django's request logger does not add an error line for it.
    response._has_been_logged = report.http_status >= 500  # type: ignore[attr-defined]  # Django's private flag: log_response skips a response already logged
    return response


def may_see_accounts(request: HttpRequest) -> bool:
    """Whether the caller is a logged-in staff user who may view mail accounts."""
    try:
        user = request.user
        return bool(user.is_active and user.is_staff and user.has_perm("accounts.view_mailaccount"))
    except DatabaseError:  # the session or the user unreadable: answer as to anyone
        return False


def favicon(request: HttpRequest) -> HttpResponse:
    """No icon, said quietly: a 204 a browser caches, rather than a 404 logged on every page."""
    response = HttpResponse(status=204)
    response["Cache-Control"] = "public, max-age=86400"
    return response


def api_root(request: HttpRequest) -> JsonResponse:
    """List what the REST API offers under /api/."""
    return JsonResponse(
        wire_keys(
            {
                "schema": reverse("api-schema"),
                "docs": reverse("api-docs"),
                "tokens": reverse("api-tokens"),
                "tokens_export": reverse("api-tokens-export"),
            }
        )
    )

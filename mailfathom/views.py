"""Project-level views: the health endpoint and the API root."""

from __future__ import annotations

import redis
from django.db import connection
from django.http import HttpRequest, JsonResponse
from django.urls import reverse

from mailfathom.keyvalue import redis_client


def health(request: HttpRequest) -> JsonResponse:
    """Report whether the database and Redis answer; 503 if either does not.

    Says nothing about mail or accounts, so it needs no authentication.
    """
    checks = {"database": _database_ok(), "redis": _redis_ok()}
    healthy = all(checks.values())
    body = {"status": "ok" if healthy else "unavailable", "checks": checks}
    return JsonResponse(body, status=200 if healthy else 503)


def _database_ok() -> bool:
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
            return cursor.fetchone() == (1,)
    except Exception:
        return False


def _redis_ok() -> bool:
    try:
        client = redis_client(timeout=2)
        try:
            return bool(client.ping())
        finally:
            client.close()
    except redis.RedisError:
        return False


def api_root(request: HttpRequest) -> JsonResponse:
    """List what the REST API offers under /api/."""
    return JsonResponse(
        {
            "schema": reverse("api-schema"),
            "docs": reverse("api-docs"),
            "tokens": reverse("api-tokens"),
            "tokensExport": reverse("api-tokens-export"),
        }
    )

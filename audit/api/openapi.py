"""What the OpenAPI schema (/api/schema/) says of the compliance API's refusals.

Every refusal has the one body shape audit/api/errors.py writes, described here once as
ErrorSerializer; each view lists the statuses it can answer with `refusals(...)`, so the
schema documents every status a route returns (tests/mailfathom/test_api_schemathesis.py
calls each operation and holds the responses to it). See docs/operations/compliance-api.md.
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import OpenApiResponse, extend_schema_field
from rest_framework import serializers


@extend_schema_field({"oneOf": [{"type": "integer"}, {"type": "string"}]})
class ErrorCodeField(serializers.Field[Any, Any, Any, Any]):
    """A five-digit MailFathom code (integer) or DRF's stable word (string); schema only."""


class ErrorSerializer(serializers.Serializer[Any]):
    """A refusal: `{"code", "detail", "argument"?, "fields"?}` (schema only: errors.py writes it)."""

    code = ErrorCodeField(help_text="51001, 51002, 52001, 52002, or a word such as permission_denied.")
    detail = serializers.CharField(help_text="A sentence naming the argument and its limit, never the value.")
    argument = serializers.CharField(
        required=False, help_text="The refused argument, with a five-digit code."
    )
    fields = serializers.JSONField(  # type: ignore[assignment]  # a declared field: the metaclass moves it off the class
        required=False, help_text="With code `invalid`: what is wrong with each field of the request body."
    )


# Why each status is answered; a view documents the ones it can return.
_WHY = {
    400: (
        "A refused argument: 51001 (page_size), 51002 (a filter or the format), 52001/52002 "
        "(cursor), token_in_url (a credential in the query string), or invalid / parse_error "
        "(the request body, with `fields`)."
    ),
    401: "No credential, or an unknown or revoked API token (not_authenticated, authentication_failed).",
    403: (
        "The credential lacks the route's permission, an API token on a route for people only, "
        "or a session request without its CSRF token (permission_denied)."
    ),
    404: (
        "No such object among the caller's own, or a `format` query argument naming no "
        "renderer on a JSON route (not_found)."
    ),
    406: "The Accept header asks for no media type this route answers in (not_acceptable).",
    415: "The request body's Content-Type is not JSON, form or multipart (unsupported_media_type).",
    429: (
        "The credential's rate for this kind of route is spent; Retry-After says when to come "
        "back (throttled)."
    ),
}


# A view's `responses`: by status, or by (status, media type) where one status has several bodies.
Responses = dict[int | tuple[int, str], OpenApiResponse]


def refusals(*statuses: int) -> Responses:
    """The `responses` entries of the refusal `statuses`, each with the ErrorSerializer body."""
    return {status: OpenApiResponse(ErrorSerializer, description=_WHY[status]) for status in statuses}

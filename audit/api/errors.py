"""How the compliance API answers a refusal: one body shape, `{"code": ..., "detail": ...}`.

`code` is the five-digit MailFathom code for a refused argument (docs/errors.md: 51001 page
size, 51002 argument, 52001/52002 cursor), otherwise DRF's stable word (not_authenticated,
authentication_failed, permission_denied, throttled, token_in_url, not_found,
method_not_allowed). A 401 carries `WWW-Authenticate: Bearer`, a 429 `Retry-After`.
"""

from __future__ import annotations

import logging
from typing import Any

from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.http import Http404
from rest_framework import exceptions
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler

from mailfathom.core.errors import MailFathomError, http_status, published

logger = logging.getLogger(__name__)


def api_exception_handler(error: Exception, context: dict[str, Any]) -> Response | None:
    """Map a MailFathomError to its HTTP status in mailfathom.core.errors.Code (400 for a refused
    argument, 500 for 54001); shape DRF's own refusals alike."""
    if isinstance(error, MailFathomError):
        answer = published(error)
        status = http_status(answer.code)
        if status >= 500:
            logger.warning("Compliance API call failed with internal code %s.", error.code)
            return Response({"code": answer.code, "detail": answer.message}, status=status)
        body: dict[str, Any] = {"code": answer.code, "detail": answer.message}
        if answer.argument:
            body["argument"] = answer.argument
        return Response(body, status=status)
    # Django's own refusals (DRF raises Http404 for an unknown ?format) as DRF's, so they get
    # the one body shape too, as DRF's handler would convert them.
    if isinstance(error, Http404):
        error = exceptions.NotFound()
    elif isinstance(error, DjangoPermissionDenied):
        error = exceptions.PermissionDenied()
    response = drf_exception_handler(error, context)
    if response is None or not isinstance(error, exceptions.APIException):
        return response
    detail = error.detail
    codes = error.get_codes()
    if isinstance(detail, dict | list):
        response.data = {"code": "invalid", "detail": "The request body is not valid.", "fields": detail}
    else:
        response.data = {"code": codes if isinstance(codes, str) else "invalid", "detail": str(detail)}
    return response

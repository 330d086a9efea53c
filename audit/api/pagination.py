"""Keyset pagination whose cursor is signed and bound to the selection it was issued for.

A cursor is sealed under its own purpose (mailfathom.core.cursors), so it cannot be forged,
edited or replayed as another token, and carries its page's last position and a fingerprint
of the route, the credential and the filters: 52001 for a cursor not ours, 52002 for one
issued for another selection. Pages are read by the ordering fields descending, never with
OFFSET, so depth costs nothing and inserted rows neither repeat nor vanish.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from typing import Any, cast

from django.core.exceptions import ValidationError
from django.db.models import Field, Model, Q, QuerySet
from drf_spectacular.utils import OpenApiParameter
from rest_framework.pagination import BasePagination
from rest_framework.request import Request
from rest_framework.response import Response

from audit.api.throttling import credential_of
from mailfathom.core import cursors
from mailfathom.core.errors import PAGE_SIZE_OUT_OF_RANGE, MailFathomError
from mailfathom.core.wire import wire_keys

PURPOSE = "api-cursor"
MAX_CURSOR_LENGTH = cursors.MAX_CURSOR_LENGTH
_OTHER_SELECTION = "different filters, another route or another credential"


class SignedCursorPagination(BasePagination):
    """Pages of `page_size` rows (1 to max_page_size) and a `nextCursor` while more remain."""

    ordering: Sequence[str] = ("created_at", "id")  # all read descending; the last must be unique
    default_page_size = 50
    max_page_size = 100
    cursor_param = "cursor"
    page_size_param = "page_size"

    def paginate_queryset(self, queryset: QuerySet[Any], request: Request, view: Any = None) -> list[Any]:  # type: ignore[override]  # pages querysets only, never a plain sequence
        size = self.page_size(request)
        fingerprint = self.fingerprint(request)
        page = queryset.order_by(*(f"-{name}" for name in self.ordering))
        text = request.query_params.get(self.cursor_param)
        if text is not None:
            page = page.filter(self._after(self.decode(text, fingerprint, queryset.model)))
        rows = list(page[: size + 1])
        self.next_cursor = self.encode(rows[size - 1], fingerprint) if len(rows) > size else None
        return rows[:size]

    def get_paginated_response(self, data: Any) -> Response:
        return Response(wire_keys({"results": data, "next_cursor": self.next_cursor}))

    def get_paginated_response_schema(self, schema: dict[str, Any]) -> dict[str, Any]:
        return {
            "type": "object",
            "properties": wire_keys({"results": schema, "next_cursor": {"type": "string", "nullable": True}}),
        }

    def page_size(self, request: Request) -> int:
        text = request.query_params.get(self.page_size_param)
        if text is None:
            return self.default_page_size
        if len(text) > 3 or not text.isdigit() or not 1 <= int(text) <= self.max_page_size:
            raise MailFathomError(
                PAGE_SIZE_OUT_OF_RANGE,
                f"The page_size argument must be a whole number from 1 to {self.max_page_size}.",
                argument="page_size",
            )
        return int(text)

    def fingerprint(self, request: Request) -> str:
        """What a cursor is bound to: the route, the credential and the filters."""
        filters = sorted(
            (name, sorted(values))
            for name, values in request.query_params.lists()
            if name not in (self.cursor_param, self.page_size_param)
        )
        route = request.resolver_match.view_name if request.resolver_match else request.path
        material = json.dumps([route, credential_of(request), filters], separators=(",", ":"))
        return hashlib.sha256(material.encode()).hexdigest()

    def encode(self, row: Model, fingerprint: str) -> str:
        values = [_wire(getattr(row, name)) for name in self.ordering]
        return cursors.seal(PURPOSE, {"p": values, "f": fingerprint})

    def decode(self, text: str, fingerprint: str, model: type[Model]) -> list[Any]:
        """The position a cursor carries; 52001 if it is not ours, 52002 if it is for another selection."""
        data = cursors.opened(PURPOSE, text, argument="cursor")
        try:
            values = data["p"]
            if not isinstance(values, list) or len(values) != len(self.ordering):
                raise ValueError("cursor position out of shape")
            position = [
                # The ordering names concrete fields, never a relation's reverse side.
                cast("Field[Any, Any]", model._meta.get_field(name)).to_python(value)
                for name, value in zip(self.ordering, values, strict=True)
            ]
            if any(value is None for value in position):
                raise ValueError("cursor position out of shape")
            issued_for = data["f"]
        except (ValueError, TypeError, KeyError, ValidationError) as error:
            raise cursors.not_issued("cursor") from error
        if issued_for != fingerprint:
            raise cursors.for_other_selection(_OTHER_SELECTION, "cursor")
        return position

    def _after(self, position: list[Any]) -> Q:
        """Rows strictly after `position` in descending order: (a < x) or (a = x and b < y) ..."""
        condition = Q()
        for index, name in enumerate(self.ordering):
            step = Q(**{f"{name}__lt": position[index]})
            for earlier, value in zip(self.ordering[:index], position[:index], strict=True):
                step &= Q(**{earlier: value})
            condition |= step
        return condition


def _wire(value: Any) -> Any:
    if isinstance(value, int | float | str) or value is None:
        return value
    if hasattr(value, "isoformat"):
        return value.isoformat()
    return str(value)


# The query parameters of every paged route, as the OpenAPI schema states them.
PAGE_PARAMETERS = [
    OpenApiParameter("cursor", str, description="nextCursor of the previous page, with the same filters."),
    OpenApiParameter(
        "page_size",
        {"type": "integer", "minimum": 1, "maximum": SignedCursorPagination.max_page_size},
        description=f"Rows per page, 1 to {SignedCursorPagination.max_page_size} (default "
        f"{SignedCursorPagination.default_page_size}); another number is refused with 51001.",
    ),
]

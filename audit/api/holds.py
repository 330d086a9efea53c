"""The legal holds route: GET /api/holds/, every hold placed, newest first, read-only.

Holds are placed and released in admin only (audit.hold_admin). What a hold publishes here is
what its record says, less the address hashes: their number stands for them. See
docs/operations/compliance-api.md (Legal holds) and docs/operations/compliance.md.
"""

from __future__ import annotations

from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from audit import api_tokens as tokens
from audit.api.openapi import ErrorSerializer, refusals
from audit.api.pagination import PAGE_PARAMETERS, SignedCursorPagination
from audit.api.serializers import WireSerializer
from audit.api.views import ComplianceApiView
from audit.hold_models import HoldRequesterKind, HoldScope, LegalHold


class LegalHoldSerializer(WireSerializer):
    # A hold's record (a comment, not a docstring: the schema would carry it).

    id = serializers.UUIDField()
    name = serializers.CharField()
    reason = serializers.CharField()
    scope = serializers.ChoiceField(choices=HoldScope.choices)
    account_ids = serializers.ListField(child=serializers.CharField())
    address_count = serializers.SerializerMethodField()
    received_on_or_after = serializers.DateTimeField(allow_null=True)
    received_before = serializers.DateTimeField(allow_null=True)
    created_by = serializers.CharField()
    created_by_kind = serializers.ChoiceField(choices=HoldRequesterKind.choices)
    created_at = serializers.DateTimeField()
    active = serializers.BooleanField(source="is_active")
    released_by = serializers.CharField()
    released_by_kind = serializers.CharField()
    released_at = serializers.DateTimeField(allow_null=True)
    release_reason = serializers.CharField()

    def get_address_count(self, hold: LegalHold) -> int:
        return len(hold.address_hashes)


class LegalHoldPageSerializer(WireSerializer):
    results = LegalHoldSerializer(many=True)
    next_cursor = serializers.CharField(allow_null=True)


class LegalHoldPagination(SignedCursorPagination):
    ordering = ("created_at", "id")


class LegalHoldListView(ComplianceApiView):
    """GET: every legal hold, active and released, newest placement first."""

    required_permission = tokens.VIEW_AUDIT

    @extend_schema(
        operation_id="holds_list",
        parameters=PAGE_PARAMETERS,
        responses={
            200: LegalHoldPageSerializer,
            400: OpenApiResponse(ErrorSerializer, description="A page size or cursor refused."),
            **refusals(401, 403, 429),
        },
    )
    def get(self, request: Request) -> Response:
        paginator = LegalHoldPagination()
        page = paginator.paginate_queryset(LegalHold.objects.all(), request, self)
        return paginator.get_paginated_response(LegalHoldSerializer(page, many=True).data)

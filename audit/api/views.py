"""Views of the compliance API: the shared base (credentials, permission, throttle, errors), token routes.

Every view declares `required_permission`, `throttle_scope` and `tokens_accepted`; the
ROUTES table in audit/api/urls.py repeats them for the permission-matrix test.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NoReturn

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import exceptions, serializers
from rest_framework.authentication import SessionAuthentication
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from audit import api_tokens as tokens
from audit.api import export, throttling
from audit.api.authentication import BearerTokenAuthentication, refuse_token_in_url
from audit.api.errors import api_exception_handler
from audit.api.openapi import refusals
from audit.api.pagination import PAGE_PARAMETERS, SignedCursorPagination
from audit.api.permissions import ANY, HasApiPermission
from audit.api.serializers import WireModelSerializer, WireSerializer
from audit.api_tokens import ApiToken
from mailfathom.core.errors import FILTER_REFUSED, MailFathomError


class ComplianceApiView(APIView):
    """Base of every compliance route: a token in the URL is refused before anything else."""

    authentication_classes = [BearerTokenAuthentication, SessionAuthentication]
    permission_classes = [HasApiPermission]
    throttle_classes = [throttling.CredentialThrottle]
    required_permission: str = ANY
    throttle_scope: str = "read"
    tokens_accepted: bool = True

    def initial(self, request: Request, *args: Any, **kwargs: Any) -> None:
        refuse_token_in_url(request)
        super().initial(request, *args, **kwargs)

    def throttled(self, request: Request, wait: float | None) -> NoReturn:
        raise exceptions.Throttled(wait=wait, detail=throttling.refusal_sentence(self.throttle_scope))

    def get_exception_handler(self) -> Callable[..., Response | None]:
        return api_exception_handler


class TokenSerializer(WireModelSerializer[ApiToken]):
    """A token as its creator sees it; the secret is never part of it."""

    created_at = serializers.DateTimeField(read_only=True)
    last_used_at = serializers.DateTimeField(read_only=True, allow_null=True)
    revoked_at = serializers.DateTimeField(read_only=True, allow_null=True)
    revoked = serializers.BooleanField(source="is_revoked", read_only=True)
    permissions = serializers.SerializerMethodField()

    class Meta:
        model = ApiToken
        fields = [
            "id",
            "name",
            "prefix",
            "permissions",
            "created_at",
            "last_used_at",
            "revoked_at",
            "revoked",
        ]

    def get_permissions(self, token: ApiToken) -> list[str]:
        return sorted(permission.codename for permission in token.permissions.all())


class TokenCreateSerializer(serializers.Serializer[Any]):
    name = serializers.CharField(max_length=tokens.MAX_NAME_LENGTH, trim_whitespace=True)
    permissions = serializers.ListField(
        child=serializers.ChoiceField(choices=tokens.API_PERMISSIONS),
        min_length=1,
        max_length=len(tokens.API_PERMISSIONS),
    )


class TokenPageSerializer(WireSerializer):
    """One page of tokens (schema only: SignedCursorPagination writes it)."""

    results = TokenSerializer(many=True)
    next_cursor = serializers.CharField(allow_null=True)


class CreatedTokenSerializer(TokenSerializer):
    """A token just created, with its secret: the one time it is shown (schema only)."""

    token = serializers.CharField()

    class Meta(TokenSerializer.Meta):
        fields = [*TokenSerializer.Meta.fields, "token"]


_REVOKED = OpenApiParameter("revoked", bool, description="Only revoked, or only active, tokens.")


def _revoked_filter(request: Request) -> bool | None:
    text = request.query_params.get("revoked")
    if text is None:
        return None
    if text not in ("true", "false"):
        raise MailFathomError(
            FILTER_REFUSED, "The revoked argument must be true or false.", argument="revoked"
        )
    return text == "true"


def _own_tokens(request: Request) -> Any:
    queryset = ApiToken.objects.created_by(request.user)
    revoked = _revoked_filter(request)
    if revoked is not None:
        queryset = queryset.filter(revoked_at__isnull=not revoked)
    return queryset


class TokenListView(ComplianceApiView):
    """GET: the caller's own tokens, newest first (?revoked=true|false). POST: create one, secret shown once.

    Only a person signed in manages tokens: a token cannot list, mint or revoke tokens.
    """

    tokens_accepted = False

    @extend_schema(
        responses={200: TokenPageSerializer, **refusals(400, 401, 403, 404, 406, 429)},
        parameters=[
            _REVOKED,
            *PAGE_PARAMETERS,
        ],
    )
    def get(self, request: Request) -> Response:
        paginator = SignedCursorPagination()
        page = paginator.paginate_queryset(
            _own_tokens(request).prefetch_related("permissions"), request, self
        )
        return paginator.get_paginated_response(TokenSerializer(page, many=True).data)

    @extend_schema(
        request=TokenCreateSerializer,
        responses={201: CreatedTokenSerializer, **refusals(400, 401, 403, 404, 406, 415, 429)},
    )
    def post(self, request: Request) -> Response:
        asked = TokenCreateSerializer(data=request.data)
        asked.is_valid(raise_exception=True)
        user = request.user
        assert user.is_authenticated  # HasApiPermission admits a signed-in user only
        try:
            issued = tokens.create_token(
                user, asked.validated_data["name"], asked.validated_data["permissions"]
            )
        except tokens.TokenRefused as refusal:
            if "does not hold" in str(refusal):
                raise exceptions.PermissionDenied(str(refusal)) from None
            raise exceptions.ValidationError(str(refusal)) from None
        body = {**TokenSerializer(issued.record).data, "token": issued.secret}
        return Response(body, status=201, headers={"Cache-Control": "no-store"})


_TOKEN_ID = OpenApiParameter(
    "token_id",
    {"type": "integer", "minimum": 0},  # the route's <int:...> takes digits only, no sign
    OpenApiParameter.PATH,
    description="The id of one of the caller's own active tokens.",
)


class TokenRevokeView(ComplianceApiView):
    """POST: revoke one of the caller's own active tokens; 404 for any other id."""

    tokens_accepted = False

    @extend_schema(
        request=None,
        parameters=[_TOKEN_ID],
        responses={200: TokenSerializer, **refusals(400, 401, 403, 404, 406, 429)},
    )
    def post(self, request: Request, token_id: int) -> Response:
        user = request.user
        assert user.is_authenticated  # HasApiPermission admits a signed-in user only
        if not tokens.revoke(token_id, user):
            raise exceptions.NotFound("No active token of yours has this id.")
        return Response(TokenSerializer(ApiToken.objects.get(pk=token_id)).data)


TOKEN_EXPORT = export.ExportSpec(
    name="api-tokens",
    columns=("id", "name", "prefix", "created_at", "last_used_at", "revoked_at"),
)


class TokenExportView(ComplianceApiView):
    """GET: the caller's own tokens as CSV or JSON Lines (the export machinery on a route of its own)."""

    required_permission = tokens.EXPORT_AUDIT
    throttle_scope = "export"

    def perform_content_negotiation(self, request: Request, force: bool = False) -> Any:
        # The export picks its own format (?format=csv|jsonl or Accept); refusals are JSON.
        return super().perform_content_negotiation(request, force=True)

    @extend_schema(
        parameters=[
            OpenApiParameter("format", str, enum=list(export.FORMATS), description="Else the Accept header."),
            _REVOKED,
        ],
        responses={
            (200, "text/csv"): OpenApiResponse(OpenApiTypes.STR, description="CSV with a header row."),
            (200, "application/jsonl"): OpenApiResponse(
                OpenApiTypes.STR, description="One JSON object a line."
            ),
            **refusals(400, 401, 403, 429),
        },
    )
    def get(self, request: Request) -> Any:
        fmt = export.requested_format(request)
        return export.stream(
            request._request, _own_tokens(request).order_by("-created_at", "-id"), TOKEN_EXPORT, fmt
        )

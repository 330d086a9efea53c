"""Routes reading the two audit trails: the answering trail and the mutation trail.

Lists are newest first under a signed cursor bound to their filters; exports stream the same
selection (audit/api/filters.py) as CSV or JSON Lines. See docs/operations/compliance-api.md,
Answering trail and Mutation trail.
"""

from __future__ import annotations

import uuid
from typing import Any

from django.contrib.postgres.aggregates import StringAgg
from django.core.exceptions import ImproperlyConfigured
from django.db.models import Prefetch, Q, QuerySet, TextField
from django.db.models.functions import Cast
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import exceptions, serializers
from rest_framework.request import Request
from rest_framework.response import Response

from audit import api_tokens as tokens
from audit.api import export, filters
from audit.api.chain import with_chain_head
from audit.api.openapi import ErrorSerializer, Responses, refusals
from audit.api.pagination import PAGE_PARAMETERS, SignedCursorPagination
from audit.api.serializers import Fields, WireSerializer
from audit.api.views import ComplianceApiView
from audit.models import (
    MUTATION_TRAIL_FIELDS,
    AnsweringRunEmail,
    AnsweringRunEntry,
    MutationKind,
    RunOutcome,
)
from mailfathom.core.errors import MailFathomError
from mailfathom.core.identifiers import issued_uuid
from mailfathom.core.wire import wire_keys, wire_name

# --- Serializers (what the schema documents) ------------------------------------------------


class RetrievedEmailSerializer(WireSerializer):
    id = serializers.UUIDField(source="email_id")
    cited = serializers.BooleanField()
    relied_on = serializers.SerializerMethodField()
    relied_on_rank = serializers.IntegerField(allow_null=True)

    def get_relied_on(self, row: AnsweringRunEmail) -> bool:
        return row.relied_on_rank is not None


class AnsweringEntrySerializer(WireSerializer):
    """One account's share of one run: the emails it read in the order the run reached them."""

    run_id = serializers.UUIDField()
    account_id = serializers.CharField(source="account.account_id")
    started_at = serializers.DateTimeField()
    ended_at = serializers.DateTimeField()
    chat_alias = serializers.CharField()
    instruction_version = serializers.CharField()
    outcome = serializers.ChoiceField(choices=RunOutcome.choices)
    degradations = serializers.SerializerMethodField()
    emails = RetrievedEmailSerializer(many=True)

    def get_degradations(self, entry: AnsweringRunEntry) -> list[str]:
        return degradations(entry)


def degradations(entry: AnsweringRunEntry) -> list[str]:
    """The names of the ways the run fell short of its normal path, in a fixed order."""
    return [
        name
        for name, happened in (
            ("retrieval_ceiling_reached", entry.retrieval_ceiling_reached),
            ("relevance_fell_back", entry.relevance_fell_back),
        )
        if happened
    ]


class AnsweringPageSerializer(WireSerializer):
    results = AnsweringEntrySerializer(many=True)
    next_cursor = serializers.CharField(allow_null=True)


class AnsweringRunSerializer(WireSerializer):
    run_id = serializers.UUIDField()
    entries = AnsweringEntrySerializer(many=True)


# The recorded account identifier is published as accountId, as the answering trail's account
# is (the record outlives the account it names).
MUTATION_PUBLISHED_AS = {"account_identifier": "account_id"}
MUTATION_WIRE_NAMES = tuple(
    wire_name(MUTATION_PUBLISHED_AS.get(name, name)) for name in MUTATION_TRAIL_FIELDS
)


class MutationEntrySerializer(WireSerializer):
    # An entry of the mutation trail: MUTATION_TRAIL_FIELDS in that order, each typed as published
    # (a comment, not a docstring: the schema would carry it).

    id = serializers.IntegerField()
    kind = serializers.ChoiceField(choices=MutationKind.choices)
    requester = serializers.CharField()
    requester_kind = serializers.CharField()
    account_id = serializers.CharField(source="account_identifier")
    message_id_hash = serializers.CharField()
    folder_alias = serializers.CharField()
    uid = serializers.IntegerField(allow_null=True)
    requested_at = serializers.DateTimeField()
    completed_at = serializers.DateTimeField(allow_null=True)
    outcome = serializers.CharField()
    failure_code = serializers.IntegerField(allow_null=True)
    counts = serializers.DictField(child=serializers.IntegerField())

    def get_fields(self) -> Fields:
        fields = super().get_fields()
        if set(fields) != set(MUTATION_WIRE_NAMES):
            raise ImproperlyConfigured(
                "MutationEntrySerializer must type each of MUTATION_TRAIL_FIELDS, no more."
            )
        return {name: fields[name] for name in MUTATION_WIRE_NAMES}


class MutationPageSerializer(WireSerializer):
    results = MutationEntrySerializer(many=True)
    next_cursor = serializers.CharField(allow_null=True)


# --- Parameters and responses shared by the routes --------------------------------------------

_REFUSALS: Responses = {
    400: OpenApiResponse(ErrorSerializer, description="A filter, page size, cursor or format refused."),
    **refusals(401, 403, 429),
}
_RANGE = [
    OpenApiParameter(
        "from", OpenApiTypes.DATETIME, description="{} at or after this time (ISO 8601, offset)."
    ),
    OpenApiParameter("before", OpenApiTypes.DATETIME, description="{} before this time (ISO 8601, offset)."),
]


def _range(subject: str) -> list[OpenApiParameter]:
    return [
        OpenApiParameter(p.name, p.type, description=str(p.description or "").format(subject)) for p in _RANGE
    ]


ANSWERING_FILTERS = [
    OpenApiParameter("account", str, description="Account identifier."),
    *_range("Runs that ended"),
    OpenApiParameter("run", OpenApiTypes.UUID, description="Run id."),
    OpenApiParameter("email", OpenApiTypes.UUID, description="Runs that read this stored email."),
    OpenApiParameter("outcome", str, enum=list(RunOutcome.values)),
]
MUTATION_FILTERS = [
    OpenApiParameter("account", str, description="Account identifier as recorded (outlives the account)."),
    OpenApiParameter("kind", str, enum=list(MutationKind.values)),
    *_range("Acts requested"),
    OpenApiParameter("requester", str, description="User name, API token name or task name, exactly."),
]
_EXPORT_RESPONSES: Responses = {
    (200, "text/csv"): OpenApiResponse(OpenApiTypes.STR, description="CSV with a header row."),
    (200, "application/jsonl"): OpenApiResponse(OpenApiTypes.STR, description="One JSON object a line."),
    **_REFUSALS,
}
_FORMAT = OpenApiParameter("format", str, enum=list(export.FORMATS), description="Else the Accept header.")


# --- Answering trail --------------------------------------------------------------------------


class EntryPagination(SignedCursorPagination):
    ordering = ("ended_at", "id")


def _with_emails(queryset: QuerySet[AnsweringRunEntry]) -> QuerySet[AnsweringRunEntry]:
    in_order = AnsweringRunEmail.objects.order_by("position")
    return queryset.select_related("account").prefetch_related(Prefetch("emails", queryset=in_order))


class AnsweringRunListView(ComplianceApiView):
    """GET: entries of the answering trail, newest end first."""

    required_permission = tokens.VIEW_AUDIT

    @extend_schema(
        operation_id="answering_runs_list",
        parameters=[*ANSWERING_FILTERS, *PAGE_PARAMETERS],
        responses={200: AnsweringPageSerializer, **_REFUSALS},
    )
    def get(self, request: Request) -> Response:
        paginator = EntryPagination()
        page = paginator.paginate_queryset(_with_emails(filters.answering_entries(request)), request, self)
        return paginator.get_paginated_response(AnsweringEntrySerializer(page, many=True).data)


class AnsweringRunDetailView(ComplianceApiView):
    """GET: one run, with the entry of every account it read, by account identifier."""

    required_permission = tokens.VIEW_AUDIT

    @extend_schema(
        operation_id="answering_run_retrieve",
        responses={
            200: AnsweringRunSerializer,
            404: OpenApiResponse(ErrorSerializer, description="No entry of the trail has this run id."),
            **_REFUSALS,
        },
    )
    def get(self, request: Request, run_id: str) -> Response:
        try:
            run: uuid.UUID | None = issued_uuid(run_id, "The run id")
        except MailFathomError:
            run = None  # no UUID names no run: 404, as an unknown one does
        entries = (
            list(_with_emails(AnsweringRunEntry.objects.filter(run_id=run)).order_by("account__account_id"))
            if run is not None
            else []
        )
        if not entries:
            raise exceptions.NotFound("No entry of the answering trail has this run id.")
        return Response(
            wire_keys({"run_id": str(run), "entries": AnsweringEntrySerializer(entries, many=True).data})
        )


# --- Mutation trail ---------------------------------------------------------------------------


class MutationPagination(SignedCursorPagination):
    ordering = ("requested_at", "id")


class MutationListView(ComplianceApiView):
    """GET: entries of the mutation trail, newest request first."""

    required_permission = tokens.VIEW_AUDIT

    @extend_schema(
        operation_id="mutations_list",
        parameters=[*MUTATION_FILTERS, *PAGE_PARAMETERS],
        responses={200: MutationPageSerializer, **_REFUSALS},
    )
    def get(self, request: Request) -> Response:
        paginator = MutationPagination()
        page = paginator.paginate_queryset(filters.mutation_entries(request), request, self)
        return paginator.get_paginated_response(MutationEntrySerializer(page, many=True).data)


# --- Exports ----------------------------------------------------------------------------------

ANSWERING_EXPORT = export.ExportSpec(
    name="answering-trail",
    columns=(
        "run_id",
        "account__account_id",
        "started_at",
        "ended_at",
        "chat_alias",
        "instruction_version",
        "outcome",
        "retrieval_ceiling_reached",
        "relevance_fell_back",
        "email_ids",
        "cited_email_ids",
        "relied_on_email_ids",
    ),
    renamed=(("account__account_id", wire_name("account_id")),),
)
MUTATION_EXPORT = export.ExportSpec(
    name="mutation-trail",
    columns=MUTATION_TRAIL_FIELDS,
    renamed=tuple((lookup, wire_name(name)) for lookup, name in MUTATION_PUBLISHED_AS.items()),
)


def answering_export_rows(queryset: QuerySet[AnsweringRunEntry]) -> QuerySet[AnsweringRunEntry]:
    """One row per entry; its emails as space-separated ids in the order the run reached them.

    The relied-on ids are in the order the answer first cited them instead.
    """
    email = Cast("emails__email_id", TextField())
    return queryset.annotate(
        email_ids=StringAgg(email, " ", order_by="emails__position", default=""),
        cited_email_ids=StringAgg(
            email, " ", order_by="emails__position", filter=Q(emails__cited=True), default=""
        ),
        relied_on_email_ids=StringAgg(
            email,
            " ",
            order_by="emails__relied_on_rank",
            filter=Q(emails__relied_on_rank__isnull=False),
            default="",
        ),
    ).order_by("-ended_at", "-id")


class _ExportView(ComplianceApiView):
    required_permission = tokens.EXPORT_AUDIT
    throttle_scope = "export"

    def perform_content_negotiation(self, request: Request, force: bool = False) -> Any:
        # The export picks its own format (?format=csv|jsonl or Accept); refusals are JSON.
        return super().perform_content_negotiation(request, force=True)


class AnsweringRunExportView(_ExportView):
    """GET: the answering-trail entries the filters select, as CSV or JSON Lines."""

    @extend_schema(
        operation_id="answering_runs_export",
        parameters=[*ANSWERING_FILTERS, _FORMAT],
        responses=_EXPORT_RESPONSES,
    )
    def get(self, request: Request) -> Any:
        fmt = export.requested_format(request)
        selected = answering_export_rows(filters.answering_entries(request))
        return with_chain_head(export.stream(request._request, selected, ANSWERING_EXPORT, fmt), "answering")


class MutationExportView(_ExportView):
    """GET: the mutation-trail entries the filters select, as CSV or JSON Lines."""

    @extend_schema(
        operation_id="mutations_export", parameters=[*MUTATION_FILTERS, _FORMAT], responses=_EXPORT_RESPONSES
    )
    def get(self, request: Request) -> Any:
        fmt = export.requested_format(request)
        selected = filters.mutation_entries(request).order_by("-requested_at", "-id")
        return with_chain_head(export.stream(request._request, selected, MUTATION_EXPORT, fmt), "mutation")

"""Routes of erasure requests: create with a preview, execute, read the statement.

Each parses its input, calls one use case of audit/services/erasure.py and renders counts.
Addresses come in request bodies only and are never written back: answers carry the request
id, counts per account and kind, and the number of addresses, never an address or its hash
(docs/operations/compliance-api.md, Erasure requests).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from typing import Any

from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import exceptions, serializers
from rest_framework.request import Request
from rest_framework.response import Response

from audit import api_tokens as tokens
from audit.api.openapi import ErrorSerializer, refusals
from audit.api.serializers import WireSerializer
from audit.api.views import ComplianceApiView
from audit.api_tokens import ApiToken
from audit.erasure_models import ErasureRequesterKind, ErasureRequestRecord, ErasureStatus
from audit.services.erasure import (
    SIGNATURE_ALGORITHM,
    ErasureStatement,
    Requester,
    erasure_statement,
    execute_erasure_request,
    request_erasure,
)
from mailbox.services.erasure import KINDS, AccountCounts
from mailfathom.core.errors import MailFathomError
from mailfathom.core.identifiers import issued_uuid
from mailfathom.core.wire import wire_keys, wire_name

# --- Serializers ------------------------------------------------------------------------------


class KindCountsSerializer(WireSerializer):
    """Rows per kind (mailbox.services.erasure.KINDS), in camelCase."""

    emails = serializers.IntegerField()
    raw_messages = serializers.IntegerField()
    attachments = serializers.IntegerField()
    participants = serializers.IntegerField()
    passages = serializers.IntegerField()
    repair_requests = serializers.IntegerField()
    attachment_texts = serializers.IntegerField()


class AccountCountsSerializer(KindCountsSerializer):
    account_id = serializers.CharField()


class ErasureCreateSerializer(WireSerializer):
    """Named as the use case names its arguments, so a 51002 names the field that was sent."""

    # The use case bounds and validates the addresses (51002, never repeating one).
    addresses = serializers.ListField(child=serializers.CharField(trim_whitespace=False))
    account_ids = serializers.ListField(
        child=serializers.CharField(), required=False, help_text="Account identifiers; absent: every account."
    )
    received_on_or_after = serializers.DateTimeField(
        required=False, help_text="Only mail received at or after this time."
    )
    received_before = serializers.DateTimeField(
        required=False, help_text="Only mail received before this time."
    )
    accounts_only = serializers.BooleanField(
        required=False,
        default=False,
        help_text="Suppress the erased mail only in the accounts it is erased from; "
        "absent or false: in every account of the deployment.",
    )


class ErasureExecuteSerializer(WireSerializer):
    addresses = serializers.ListField(
        child=serializers.CharField(trim_whitespace=False),
        help_text="Exactly the addresses the request was made for (they are not stored).",
    )


class ErasurePreviewSerializer(WireSerializer):
    request_id = serializers.UUIDField()
    status = serializers.CharField()
    accounts = AccountCountsSerializer(many=True, help_text="What executing would remove, per account.")
    totals = KindCountsSerializer()


class ErasureStatementSerializer(WireSerializer):
    request_id = serializers.UUIDField()
    status = serializers.ChoiceField(choices=ErasureStatus.choices)
    requested_by = serializers.CharField()
    requested_by_kind = serializers.CharField()
    requested_at = serializers.DateTimeField()
    executed_by = serializers.CharField()
    executed_by_kind = serializers.CharField()
    executed_at = serializers.DateTimeField(allow_null=True)
    address_count = serializers.IntegerField()
    account_scope = serializers.ListField(
        child=serializers.CharField(), help_text="The request's accounts; empty: every account."
    )
    received_on_or_after = serializers.DateTimeField(allow_null=True)
    received_before = serializers.DateTimeField(allow_null=True)
    accounts = AccountCountsSerializer(many=True, help_text="What was erased; empty until executed.")
    totals = KindCountsSerializer()
    requested_by_person = serializers.CharField(help_text="The user behind the request (a token's owner).")
    executed_by_person = serializers.CharField(help_text="The user behind the execution.")
    single_operator = serializers.BooleanField(
        help_text="MAILFATHOM_ERASURE_SINGLE_OPERATOR was on at execution: one person may have done both."
    )
    accounts_only = serializers.BooleanField(help_text="Suppressed only in the accounts erased from.")
    message_id_hashes = serializers.ListField(
        child=serializers.CharField(), help_text="Keyed hashes of the erased messages' Message-IDs."
    )
    suppressions = serializers.DictField(help_text="scope, written, ids, perAccount, withoutMessageId.")
    removed_rows = serializers.DictField(help_text="Rows of other apps removed with the mail: per model.")
    cleanup = serializers.DictField(help_text="completedAt (null: not run yet) and the steps it ran.")
    what_stays = serializers.ListField(child=serializers.CharField())
    how_to_find = serializers.ListField(child=serializers.CharField())
    cannot_erase = serializers.ListField(child=serializers.CharField())
    guide = serializers.CharField()
    signed_document = serializers.DictField(
        allow_null=True, help_text="The statement as signed (snake_case keys); null until executed."
    )
    signature = serializers.DictField(
        allow_null=True, help_text="algorithm (Ed25519), value, publicKey, signedAt; null until executed."
    )


# --- Rendering --------------------------------------------------------------------------------


def _counts(accounts: Iterable[AccountCounts]) -> tuple[list[dict[str, Any]], dict[str, int]]:
    rows = [
        wire_keys({"account_id": counts.account_id, **{kind: getattr(counts, kind) for kind in KINDS}})
        for counts in sorted(accounts, key=lambda counts: counts.account_id)
    ]
    totals = {wire_name(kind): sum(row[wire_name(kind)] for row in rows) for kind in KINDS}
    return rows, totals


def render_statement(statement: ErasureStatement) -> dict[str, Any]:
    rows, totals = _counts(statement.accounts)
    return wire_keys(
        {
            "request_id": str(statement.request_id),
            "status": statement.status,
            "requested_by": statement.requested_by,
            "requested_by_kind": statement.requested_by_kind,
            "requested_at": statement.requested_at.isoformat(),
            "executed_by": statement.executed_by,
            "executed_by_kind": statement.executed_by_kind,
            "executed_at": statement.executed_at.isoformat() if statement.executed_at else None,
            "address_count": len(statement.address_hashes),
            "account_scope": list(statement.account_ids),
            "received_on_or_after": _iso(statement.received_on_or_after),
            "received_before": _iso(statement.received_before),
            "accounts": rows,
            "totals": totals,
            "requested_by_person": statement.requested_by_person,
            "executed_by_person": statement.executed_by_person,
            "single_operator": statement.single_operator,
            "accounts_only": statement.accounts_only,
            "message_id_hashes": list(statement.message_id_hashes),
            "suppressions": wire_keys(dict(statement.suppressions)),
            "removed_rows": dict(statement.removed_rows),
            "cleanup": wire_keys(
                {"completed_at": _iso(statement.cleanup_completed_at), "steps": list(statement.cleanup_steps)}
            ),
            "what_stays": list(statement.what_stays),
            "how_to_find": list(statement.how_to_find),
            "cannot_erase": list(statement.cannot_erase),
            "guide": statement.guide,
            # Exactly as signed: a verifier needs these bytes, not a re-keyed copy.
            "signed_document": statement.document,
            "signature": wire_keys(
                {
                    "algorithm": SIGNATURE_ALGORITHM,
                    "value": statement.signature,
                    "public_key": statement.public_key,
                    "signed_at": _iso(statement.signed_at),
                }
            )
            if statement.signature
            else None,
        }
    )


def _iso(value: Any) -> str | None:
    return value.isoformat() if value is not None else None


def requester_of(request: Request) -> Requester:
    """Who acts, as the erasure record names them (the token's name with its owner's, or the
    person's user name), and the person behind it."""
    # A token authenticates as its owner (audit.api.authentication): the owner is the person,
    # so two tokens of one user are one person to the four-eyes rule.
    person = request.user.get_username()
    if isinstance(request.auth, ApiToken):
        return Requester(name=request.auth.owned_name, kind=ErasureRequesterKind.API_TOKEN, person=person)
    return Requester(name=person, kind=ErasureRequesterKind.USER, person=person)


def _held(request_id: str) -> uuid.UUID:
    """The id of a request this deployment holds; 404 (the error body) otherwise."""
    try:
        parsed: uuid.UUID | None = issued_uuid(request_id, "The request id")
    except MailFathomError:
        parsed = None
    if parsed is None or not ErasureRequestRecord.objects.filter(pk=parsed).exists():
        raise exceptions.NotFound("No erasure request has this id.")
    return parsed


_REFUSALS = refusals(401, 403, 429)
_NOT_FOUND = OpenApiResponse(ErrorSerializer, description="No erasure request has this id.")


# --- Views ------------------------------------------------------------------------------------


class ErasureRequestCreateView(ComplianceApiView):
    """POST: record an erasure request and answer what executing it would remove; no mail changes."""

    required_permission = tokens.REQUEST_ERASURE
    throttle_scope = "erasure"

    @extend_schema(
        operation_id="erasure_request_create",
        request=ErasureCreateSerializer,
        responses={
            201: ErasurePreviewSerializer,
            400: OpenApiResponse(
                ErrorSerializer, description="An argument refused (51002) or a body invalid."
            ),
            **_REFUSALS,
        },
    )
    def post(self, request: Request) -> Response:
        asked = ErasureCreateSerializer(data=request.data)
        asked.is_valid(raise_exception=True)
        values = asked.validated_data
        requested = request_erasure(
            values["addresses"],
            account_ids=values.get("account_ids"),
            received_on_or_after=values.get("received_on_or_after"),
            received_before=values.get("received_before"),
            accounts_only=values.get("accounts_only", False),
            requester=requester_of(request),
        )
        rows, totals = _counts(requested.accounts)
        body = wire_keys(
            {
                "request_id": str(requested.request_id),
                "status": ErasureStatus.PREVIEWED,
                "accounts": rows,
                "totals": totals,
            }
        )
        return Response(body, status=201, headers={"Cache-Control": "no-store"})


class ErasureRequestExecuteView(ComplianceApiView):
    """POST: execute a previewed request, given its addresses again; answer the statement."""

    required_permission = tokens.EXECUTE_ERASURE
    throttle_scope = "erasure"

    @extend_schema(
        operation_id="erasure_request_execute",
        request=ErasureExecuteSerializer,
        responses={
            200: ErasureStatementSerializer,
            400: OpenApiResponse(
                ErrorSerializer,
                description="Addresses not those of the request (51002); request already executed "
                "or abandoned (53004); body invalid.",
            ),
            404: _NOT_FOUND,
            **_REFUSALS,
            403: OpenApiResponse(
                ErrorSerializer,
                description="The credential lacks the permission, or its person requested this "
                "erasure (58002: another person must execute it).",
            ),
        },
    )
    def post(self, request: Request, request_id: str) -> Response:
        held = _held(request_id)
        asked = ErasureExecuteSerializer(data=request.data)
        asked.is_valid(raise_exception=True)
        statement = execute_erasure_request(
            held, asked.validated_data["addresses"], requester=requester_of(request)
        )
        return Response(render_statement(statement), headers={"Cache-Control": "no-store"})


class ErasureStatementView(ComplianceApiView):
    """GET: the statement of a request (no accounts until it is executed)."""

    required_permission = tokens.VIEW_AUDIT

    @extend_schema(
        operation_id="erasure_request_statement",
        responses={200: ErasureStatementSerializer, 404: _NOT_FOUND, **_REFUSALS},
    )
    def get(self, request: Request, request_id: str) -> Response:
        statement = erasure_statement(_held(request_id))
        return Response(render_statement(statement), headers={"Cache-Control": "no-store"})

"""The tamper-evidence route (GET /api/trails/verify/) and the chain head every trail export carries.

See docs/operations/compliance-api.md, Tamper evidence, and audit/services/chain.py.
"""

from __future__ import annotations

from typing import Any

from django.http import HttpResponseBase
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from audit import api_tokens as tokens
from audit.api.openapi import refusals
from audit.api.serializers import WireSerializer
from audit.api.views import ComplianceApiView
from audit.services import chain
from mailfathom.core.errors import FILTER_REFUSED, MailFathomError

HEAD_HEADER = "X-MailFathom-Chain-Head"  # "<seq>:<chain hash>" of the trail's last link
COUNT_HEADER = "X-MailFathom-Chain-Count"  # entries the trail held when the export began
TRAIL_HEADER = "X-MailFathom-Chain-Trail"


def with_chain_head(response: HttpResponseBase, trail: str) -> HttpResponseBase:
    """Mark an export with its trail's chain head and entry count: in headers, and in the file name.

    The file name keeps the head when the export is saved (`curl -OJ`, a browser download):
    `mutation-trail.chain-<seq>-<hash>.csv`.
    """
    seq, digest = chain.head(trail)
    count = chain.entry_count(trail)
    response[TRAIL_HEADER] = trail
    response[HEAD_HEADER] = f"{seq}:{digest}"
    response[COUNT_HEADER] = str(count)
    disposition = response.get("Content-Disposition", "")
    name, dot, extension = (
        disposition.removeprefix('attachment; filename="').removesuffix('"').rpartition(".")
    )
    if dot:
        response["Content-Disposition"] = (
            f'attachment; filename="{name}.chain-{seq}-{digest or "none"}.{extension}"'
        )
    return response


class BreakSerializer(WireSerializer):
    seq = serializers.IntegerField(
        allow_null=True, help_text="The link concerned; null: an entry with no link."
    )
    entry = serializers.CharField(help_text="The entry's primary key as text; empty for a link of its own.")
    reason = serializers.ChoiceField(choices=chain.REASONS)


class HeadSerializer(WireSerializer):
    seq = serializers.IntegerField()
    chain_hash = serializers.CharField()


class TrailVerificationSerializer(WireSerializer):
    trail = serializers.CharField()
    ok = serializers.BooleanField()
    entries = serializers.IntegerField(help_text="Entries stored now.")
    links = serializers.IntegerField(help_text="Links held after the last checkpoint.")
    head = HeadSerializer()
    checkpoint_seq = serializers.IntegerField(
        help_text="Links up to this one were pruned by retention; 0: none."
    )
    breaks = serializers.IntegerField(help_text="How many places disagree.")
    first_break = BreakSerializer(allow_null=True)


class LinkAtSerializer(WireSerializer):
    seq = serializers.IntegerField()
    held = serializers.BooleanField(help_text="The live chain still holds this link.")
    pruned = serializers.BooleanField(required=False, help_text="Retention pruned it (under a checkpoint).")
    chain_hash = serializers.CharField(allow_null=True)


class VerificationSerializer(WireSerializer):
    ok = serializers.BooleanField()
    trails = TrailVerificationSerializer(many=True)
    link_at = LinkAtSerializer(required=False, help_text="With ?trail= and ?at=: the live link at that seq.")


def _report(report: chain.TrailReport) -> dict[str, Any]:
    return {
        "trail": report.trail,
        "ok": report.ok,
        "entries": report.entries,
        "links": report.links,
        "head": {"seq": report.head_seq, "chain_hash": report.head_hash},
        "checkpoint_seq": report.checkpoint_seq,
        "breaks": report.breaks,
        "first_break": report.first_break.as_dict() if report.first_break else None,
    }


class TrailVerifyView(ComplianceApiView):
    """GET: check every trail (or ?trail=) against its hash chain; report the first break of each."""

    required_permission = tokens.VIEW_AUDIT
    throttle_scope = "export"  # it reads every entry of every trail

    @extend_schema(
        operation_id="trails_verify",
        parameters=[
            OpenApiParameter("trail", str, enum=list(chain.trails()) or None, description="Only this trail."),
            OpenApiParameter(
                "at",
                OpenApiTypes.INT,
                description="With trail: the live chain hash at this seq (to check a saved export's head).",
            ),
        ],
        responses={200: VerificationSerializer, **refusals(400, 401, 403, 429)},
    )
    def get(self, request: Request) -> Response:
        trail = request.query_params.get("trail")
        if trail is not None and trail not in chain.trails():
            raise MailFathomError(
                FILTER_REFUSED, "The trail argument must name a chained trail.", argument="trail"
            )
        at = _at(request.query_params.get("at"), trail)
        reports = [_report(report) for report in chain.verify_trails([trail] if trail else None)]
        body: dict[str, Any] = {"ok": all(report["ok"] for report in reports), "trails": reports}
        if at is not None and trail is not None:
            body["link_at"] = chain.link_at(trail, at)
        return Response(VerificationSerializer(body).data)


def _at(text: str | None, trail: str | None) -> int | None:
    if text is None:
        return None
    if trail is None or len(text) > 19 or not text.isdigit():
        raise MailFathomError(
            FILTER_REFUSED,
            "The at argument must be a link sequence number (digits), given with the trail argument.",
            argument="at",
        )
    return int(text)

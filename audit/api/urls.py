"""Routes of the compliance API, mounted under /api/, and the ROUTES table describing them.

ROUTES is the one list of what each route requires. The permission-matrix test
(tests/audit/test_api_matrix.py) calls every row with every kind of credential and expects
exactly the status docs/operations/compliance-api.md documents; a new route joins the
matrix by adding a row here.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from django.urls import path

from audit import api_tokens as tokens
from audit.api import chain, erasure, holds, trails, views
from audit.api.permissions import ANY


@dataclass(frozen=True)
class Route:
    """One method on one path: who may call it and what a permitted call answers.

    `path` may hold `{placeholders}` the matrix test fills for each caller (`{own_token}`: the
    id of a token the caller created).
    """

    path: str
    method: str
    permission: str  # a codename of audit.api_tokens.API_PERMISSIONS, or ANY
    throttle_scope: str
    success: int
    tokens_accepted: bool = True
    body: dict[str, Any] = field(default_factory=dict)


ROUTES: tuple[Route, ...] = (
    Route("/api/tokens/", "GET", ANY, "read", 200, tokens_accepted=False),
    Route(
        "/api/tokens/",
        "POST",
        ANY,
        "read",
        201,
        tokens_accepted=False,
        body={"name": "matrix", "permissions": ["{a_held_permission}"]},
    ),
    Route("/api/tokens/{own_token}/revoke/", "POST", ANY, "read", 200, tokens_accepted=False),
    Route("/api/tokens/export/", "GET", tokens.EXPORT_AUDIT, "export", 200),
    Route("/api/answering-runs/", "GET", tokens.VIEW_AUDIT, "read", 200),
    Route("/api/answering-runs/{a_run}/", "GET", tokens.VIEW_AUDIT, "read", 200),
    Route("/api/answering-runs/export/", "GET", tokens.EXPORT_AUDIT, "export", 200),
    Route("/api/mutations/", "GET", tokens.VIEW_AUDIT, "read", 200),
    Route("/api/mutations/export/", "GET", tokens.EXPORT_AUDIT, "export", 200),
    Route(
        "/api/erasure-requests/",
        "POST",
        tokens.REQUEST_ERASURE,
        "erasure",
        201,
        body={"addresses": ["{an_erasure_address}"]},
    ),
    Route(
        "/api/erasure-requests/{an_erasure_request}/execute/",
        "POST",
        tokens.EXECUTE_ERASURE,
        "erasure",
        200,
        body={"addresses": ["{an_erasure_address}"]},
    ),
    Route("/api/erasure-requests/{an_erasure_request}/statement/", "GET", tokens.VIEW_AUDIT, "read", 200),
    Route("/api/trails/verify/", "GET", tokens.VIEW_AUDIT, "export", 200),
    Route("/api/holds/", "GET", tokens.VIEW_AUDIT, "read", 200),
)

urlpatterns = [
    path("tokens/", views.TokenListView.as_view(), name="api-tokens"),
    path("tokens/export/", views.TokenExportView.as_view(), name="api-tokens-export"),
    path("tokens/<int:token_id>/revoke/", views.TokenRevokeView.as_view(), name="api-token-revoke"),
    path("answering-runs/", trails.AnsweringRunListView.as_view(), name="api-answering-runs"),
    # Before the run route: "export" would otherwise be read as a run id.
    path("answering-runs/export/", trails.AnsweringRunExportView.as_view(), name="api-answering-runs-export"),
    path("answering-runs/<str:run_id>/", trails.AnsweringRunDetailView.as_view(), name="api-answering-run"),
    path("mutations/", trails.MutationListView.as_view(), name="api-mutations"),
    path("mutations/export/", trails.MutationExportView.as_view(), name="api-mutations-export"),
    path("trails/verify/", chain.TrailVerifyView.as_view(), name="api-trails-verify"),
    path("erasure-requests/", erasure.ErasureRequestCreateView.as_view(), name="api-erasure-requests"),
    path(
        "erasure-requests/<str:request_id>/execute/",
        erasure.ErasureRequestExecuteView.as_view(),
        name="api-erasure-request-execute",
    ),
    path(
        "erasure-requests/<str:request_id>/statement/",
        erasure.ErasureStatementView.as_view(),
        name="api-erasure-request-statement",
    ),
    path("holds/", holds.LegalHoldListView.as_view(), name="api-holds"),
]

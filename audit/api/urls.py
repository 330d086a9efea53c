"""Routes of the compliance API, mounted under /api/, and the ROUTES table describing them.

ROUTES is the one list of what each route requires. The permission-matrix test
(tests/audit/test_api_matrix.py) calls every row with every kind of credential and expects
exactly the status docs/operations/compliance-api.md documents; a new route joins the
matrix by adding a row here. The trails and erasure routes join it as they are built.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from django.urls import path

from audit import tokens
from audit.api import views
from audit.api.permissions import ANY


@dataclass(frozen=True)
class Route:
    """One method on one path: who may call it and what a permitted call answers.

    `path` may hold `{placeholders}` the matrix test fills for each caller (`{own_token}`: the
    id of a token the caller created).
    """

    path: str
    method: str
    permission: str  # a codename of audit.tokens.API_PERMISSIONS, or ANY
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
)

urlpatterns = [
    path("tokens/", views.TokenListView.as_view(), name="api-tokens"),
    path("tokens/export/", views.TokenExportView.as_view(), name="api-tokens-export"),
    path("tokens/<int:token_id>/revoke/", views.TokenRevokeView.as_view(), name="api-token-revoke"),
]

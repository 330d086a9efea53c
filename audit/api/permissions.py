"""Who may call a route: the Django permission each view declares, held now.

A person signed in needs the permission (directly, through a group such as Compliance, or
as a superuser). A token needs it among its own permissions and its creator must still hold
it: the two are intersected on every request, so demoting the creator demotes the token.
"""

from __future__ import annotations

from typing import Any

from rest_framework import exceptions
from rest_framework.permissions import BasePermission
from rest_framework.request import Request

from audit.api_tokens import ApiToken, held_by

# A view whose required_permission is ANY admits a caller holding any API permission.
ANY = "any"


def credential_permissions(request: Request) -> set[str]:
    """The API permissions the request's credential carries now."""
    user = request.user
    if user is None or not user.is_authenticated:
        return set()
    held = held_by(user)
    if isinstance(request.auth, ApiToken):
        held &= request.auth.permission_names()
    return held


class HasApiPermission(BasePermission):
    """Admit the request if its credential holds the view's `required_permission`.

    Views declare `required_permission` (a codename of audit.api_tokens.API_PERMISSIONS, or ANY)
    and `tokens_accepted` (False for routes only a person signed in may use).
    """

    message = "The credential does not hold the permission this route requires."

    def has_permission(self, request: Request, view: Any) -> bool:
        if request.user is None or not request.user.is_authenticated:
            return False  # DRF answers 401 with the Bearer challenge
        if isinstance(request.auth, ApiToken) and not view.tokens_accepted:
            raise exceptions.PermissionDenied("This route takes a person signed in, not an API token.")
        held = credential_permissions(request)
        required = view.required_permission
        if required == ANY:
            return bool(held)
        if required not in held:
            raise exceptions.PermissionDenied(
                f"The credential does not hold the permission this route requires (audit.{required})."
            )
        return True

"""Operator console for /mcp's OAuth clients and people's connections: see them, disable, revoke.

Clients register themselves or are read from their metadata documents, so nothing here is
added or edited by hand; an operator disables a client (refused everywhere at once) or
revokes a connection (its tokens refused at the next call).
"""

from __future__ import annotations

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest
from django.utils.translation import gettext, ngettext
from django.utils.translation import gettext_lazy as _

from accounts.models import McpConnection, McpOAuthClient
from accounts.services.mcp_oauth_clients import disable_client
from accounts.services.mcp_oauth_tokens import revoke_connection


class _ReadOnly(admin.ModelAdmin):  # type: ignore[type-arg]  # the generic parameter is the model
    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False


@admin.register(McpOAuthClient)
class McpOAuthClientAdmin(_ReadOnly):
    list_display = ["client_name", "kind", "client_id", "status", "created_at", "last_used_at"]
    list_filter = ["kind", ("disabled_at", admin.EmptyFieldListFilter)]
    search_fields = ["client_name", "client_id"]
    actions = ["disable_clients"]

    @admin.display(description=_("Status"))
    def status(self, obj: McpOAuthClient) -> str:
        return gettext("disabled") if obj.is_disabled else gettext("enabled")

    @admin.action(description=_("Disable selected clients (refused from now on)"), permissions=["delete"])
    def disable_clients(self, request: HttpRequest, queryset: QuerySet[McpOAuthClient]) -> None:
        done = sum(disable_client(pk) for pk in queryset.values_list("pk", flat=True))
        self.message_user(
            request,
            ngettext("%(count)d client disabled.", "%(count)d clients disabled.", done) % {"count": done},
            messages.SUCCESS,
        )


@admin.register(McpConnection)
class McpConnectionAdmin(_ReadOnly):
    list_display = ["client", "user", "reads", "created_at", "last_used_at", "revoked_at"]
    list_filter = [("revoked_at", admin.EmptyFieldListFilter)]
    search_fields = ["client__client_name", "user__username"]
    list_select_related = ["client", "user"]
    actions = ["revoke_connections"]

    @admin.display(description=_("Reads"))
    def reads(self, obj: McpConnection) -> str:
        return ", ".join(account.account_id for account in obj.accounts.all()) or gettext("no account")

    def get_queryset(self, request: HttpRequest) -> QuerySet[McpConnection]:
        return super().get_queryset(request).prefetch_related("accounts")

    @admin.action(description=_("Revoke selected connections"), permissions=["delete"])
    def revoke_connections(self, request: HttpRequest, queryset: QuerySet[McpConnection]) -> None:
        done = sum(revoke_connection(pk) for pk in queryset.values_list("pk", flat=True))
        self.message_user(
            request,
            ngettext("%(count)d connection revoked.", "%(count)d connections revoked.", done)
            % {"count": done},
            messages.SUCCESS,
        )

"""Operator console for MCP API keys: create one (shown once), see when each was used, revoke.

The page shown once after creating a key gives the endpoint's full URL and a configuration
for each MCP client with the key filled in (accounts.services.mcp_clients).

Creating a key goes through accounts.services.mcp_keys, which stores only its hash; the
key itself is rendered once in the response to the add form and kept nowhere else (not in
a message, which would sit in the session store until read).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from django import forms
from django.conf import settings
from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.template.loader import render_to_string
from django.utils.html import format_html
from django.utils.translation import gettext, ngettext
from django.utils.translation import gettext_lazy as _

from accounts.models import McpApiKey
from accounts.services.mcp_clients import CLIENTS, client_configs, mcp_url
from accounts.services.mcp_keys import VERIFIED_KEY_SECONDS, create_key, revoke

if TYPE_CHECKING:  # the admin's own return types, declared by django-stubs only
    from django.contrib.admin.options import _FieldGroups


KEY_CREATED_TEMPLATE = "admin/accounts/mcpapikey/key_created.html"


class McpApiKeyForm(forms.ModelForm):
    class Meta:
        model = McpApiKey
        fields = ["name", "limited", "accounts"]

    def clean(self) -> dict[str, object]:
        data = super().clean() or {}
        chosen = data.get("accounts")
        if not data.get("limited") and chosen:
            self.add_error("limited", gettext("Tick this to limit the key to the accounts chosen."))
        elif data.get("limited") and not chosen:
            # A key that reads nothing is a mistake, not a scope: say so rather than store it.
            self.add_error("accounts", gettext("Choose at least one account, or untick the limit."))
        return data


@admin.register(McpApiKey)
class McpApiKeyAdmin(admin.ModelAdmin):
    form = McpApiKeyForm
    list_display = ["name", "prefix", "status", "reads", "created_at", "last_used_at", "revoked_at"]
    list_filter = [("revoked_at", admin.EmptyFieldListFilter), "limited"]
    search_fields = ["name", "prefix"]
    fields = [
        "name",
        "limited",
        "accounts",
        "prefix",
        "created_at",
        "last_used_at",
        "revoked_at",
        "connect_a_client",
    ]
    readonly_fields = ["prefix", "created_at", "last_used_at", "revoked_at", "connect_a_client"]
    filter_horizontal = ["accounts"]
    actions = ["revoke_keys"]

    @admin.display(description=_("Status"))
    def status(self, obj: McpApiKey) -> str:
        return gettext("revoked") if obj.is_revoked else gettext("active")

    @admin.display(description=_("Connect a client"))
    def connect_a_client(self, obj: McpApiKey) -> str:
        # The key itself was shown once, when it was created; the snippets hold a placeholder.
        return format_html(
            gettext(
                "<code>manage.py mcp_client_config CLIENT</code> ({clients}) prints a client's "
                "configuration, with a placeholder for the key, which was shown only when it was created."
            ),
            clients=", ".join(CLIENTS),
        )

    @admin.display(description=_("Reads"))
    def reads(self, obj: McpApiKey) -> str:
        if not obj.limited:
            return gettext("every account")
        return ", ".join(account.account_id for account in obj.accounts.all()) or gettext("no account")

    def get_queryset(self, request: HttpRequest) -> QuerySet[McpApiKey]:
        return super().get_queryset(request).prefetch_related("accounts")

    def get_fields(self, request: HttpRequest, obj: McpApiKey | None = None) -> _FieldGroups:
        return ["name", "limited", "accounts"] if obj is None else list(self.fields)

    def save_model(self, request: HttpRequest, obj: McpApiKey, form: object, change: bool) -> None:
        if change:
            obj.save(update_fields=["name", "limited"])
            self.message_user(
                request,
                gettext("Running servers apply a changed account list within %(seconds)s seconds.")
                % {"seconds": f"{VERIFIED_KEY_SECONDS:g}"},
                messages.INFO,
            )
            return
        # The account list is saved by save_related, on the record create_key made.
        issued = create_key(obj.name)
        McpApiKey.objects.filter(pk=issued.record.pk).update(limited=obj.limited)
        obj.pk = issued.record.pk
        obj.prefix = issued.record.prefix
        obj.key_hash = issued.record.key_hash
        obj.created_at = issued.record.created_at
        obj._state.adding = False
        obj._state.db = issued.record._state.db  # save_related adds the chosen accounts through obj
        obj._issued_key = issued.key  # type: ignore[attr-defined]  # rendered once by response_add

    def response_add(
        self, request: HttpRequest, obj: McpApiKey, post_url_continue: str | None = None
    ) -> HttpResponse:
        key = getattr(obj, "_issued_key", None)
        if key is None:
            return super().response_add(request, obj, post_url_continue)
        url = mcp_url(request.build_absolute_uri("/").rstrip("/"))
        context = {
            **self.admin_site.each_context(request),
            "title": gettext("MCP API key created"),  # admin's page heading, and the window's title
            "name": obj.name,
            "key": key,
            "prefix": obj.prefix,
            "url": url,
            "enabled": settings.MAILFATHOM.mcp_enabled,
            "configs": client_configs(url, key),
            "clients": CLIENTS,
            "changelist_url": "../",
        }
        response = HttpResponse(render_to_string(KEY_CREATED_TEMPLATE, context, request))
        response["Cache-Control"] = "no-store"
        return response

    @admin.action(description=_("Revoke selected keys"))
    def revoke_keys(self, request: HttpRequest, queryset: QuerySet[McpApiKey]) -> None:
        revoked = sum(revoke(key.pk) for key in queryset)
        self.message_user(
            request,
            ngettext("%(count)d key revoked.", "%(count)d keys revoked.", revoked) % {"count": revoked},
            messages.SUCCESS,
        )

"""Operator console for mail accounts and their folder mappings."""

from __future__ import annotations

from django.contrib import admin, messages
from django.forms import ModelForm
from django.http import HttpRequest
from django.urls import URLPattern, path, reverse
from django.utils.html import format_html

from accounts import admin_mcp  # noqa: F401  (registers the MCP key admin)
from accounts.admin_connection import test_connection_view
from accounts.forms import FolderMappingFormSet, MailAccountForm
from accounts.models import DraftingExample, DraftingSignature, FolderMapping, MailAccount, SyncMode


class DraftingSignatureInline(admin.TabularInline):
    model = DraftingSignature
    extra = 0
    fields = ["language", "text"]
    verbose_name = "drafting signature"


class DraftingExampleInline(admin.StackedInline):
    model = DraftingExample
    extra = 0
    fields = ["position", "incoming", "reply"]
    verbose_name = "drafting example (few-shot)"


PUSH_TAKES_EFFECT = (
    "Push mode takes effect within a minute of the account's first synchronization: beat "
    "starts an IMAP IDLE watcher per mapped folder every 60 seconds (the push worker runs "
    "them). Polling goes on beside it."
)
POLLING_TAKES_EFFECT = (
    "Polling only from now on: running IDLE watchers end within 20 minutes and are not restarted."
)


class FolderMappingInline(admin.TabularInline):
    model = FolderMapping
    formset = FolderMappingFormSet
    extra = 1
    fields = ["alias", "remote_name", "role", "visible_to_tools"]


class MailAccountAdmin(admin.ModelAdmin):
    """The account itself: its form, folders, drafting texts and the connection test.

    Registered by mailfathom.admin together with the parts mailbox and answering add.
    """

    form = MailAccountForm
    inlines = [FolderMappingInline, DraftingSignatureInline, DraftingExampleInline]
    list_display = ["account_id", "display_name", "imap_host", "served", "sync_enabled", "sync_mode"]
    list_filter = ["served", "sync_enabled", "sync_mode", "security"]
    search_fields = ["account_id", "display_name"]
    readonly_fields = ["credential_status", "connection_link", "created_at", "updated_at"]
    fieldsets = [
        (None, {"fields": ["account_id", "display_name", "served"]}),
        (
            "IMAP server",
            {
                "fields": [
                    "imap_host",
                    "imap_port",
                    "security",
                    "username",
                    "credential",
                    "credential_status",
                    "connection_link",
                ]
            },
        ),
        (
            "Synchronization",
            {
                "fields": [
                    "sync_enabled",
                    "sync_mode",
                    "poll_interval_seconds",
                    "max_message_bytes",
                    "storage_ceiling_bytes",
                ]
            },
        ),
        ("Answering audit trail", {"fields": ["answering_audit_enabled", "answering_audit_retention_days"]}),
        ("Mutation trail", {"fields": ["mutation_audit_enabled", "mutation_audit_retention_days"]}),
        (
            "Reply drafting",
            {
                "fields": [
                    "drafting_enabled",
                    "drafting_window_days",
                    "drafting_max_per_run",
                    "drafting_append_mode",
                ]
            },
        ),
        ("Record", {"fields": ["created_at", "updated_at"], "classes": ["collapse"]}),
    ]

    def get_readonly_fields(self, request: HttpRequest, obj: MailAccount | None = None) -> list[str]:
        fields = list(super().get_readonly_fields(request, obj))
        if obj is not None:
            fields.append("account_id")  # immutable once saved: every result reports it
        return fields

    @admin.display(description="Credential")
    def credential_status(self, obj: MailAccount) -> str:
        return "stored (encrypted)" if obj.has_credential else "none stored"

    @admin.display(description="Connection")
    def connection_link(self, obj: MailAccount) -> str:
        if obj.pk is None:
            return "Save the account first, then test its connection."
        url = reverse("admin:accounts_mailaccount_test_connection", args=[obj.pk])
        return format_html('<a class="button" href="{}">Test connection and map folders</a>', url)

    def save_model(self, request: HttpRequest, obj: MailAccount, form: ModelForm, change: bool) -> None:
        super().save_model(request, obj, form, change)
        if "sync_mode" in form.changed_data or (not change and obj.sync_mode == SyncMode.PUSH):
            if obj.sync_mode == SyncMode.PUSH:
                messages.info(request, PUSH_TAKES_EFFECT)
            elif change:
                messages.info(request, POLLING_TAKES_EFFECT)

    def get_urls(self) -> list[URLPattern]:
        custom = [
            path(
                "<path:object_id>/test-connection/",
                self.admin_site.admin_view(
                    lambda request, object_id: test_connection_view(self, request, object_id)
                ),
                name="accounts_mailaccount_test_connection",
            )
        ]
        return custom + super().get_urls()

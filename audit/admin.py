"""Read-only console for the audit trails: listed, filtered, never added, changed or deleted here.

Entries leave only by retention or, for the answering trail, with the mail they name
(docs/operations/compliance.md). Erasure requests are read-only too; executing one goes
through a confirmation page that asks for the addresses again (audit.erasure_admin).

Both trails are an operator's (their model permissions); someone holding one without being
an operator sees the entries of the accounts they may read (accounts.services.people), and
a mutation entry whose account is gone only as an operator. Erasure requests name people,
not accounts, and stay with their permissions.
"""

from __future__ import annotations

from django.contrib import admin
from django.urls import reverse
from django.utils.html import format_html
from django.utils.translation import gettext_lazy as _

from accounts.admin_people import PeopleScoped
from accounts.services import people
from audit.access_models import ACCESS_TRAIL_FIELDS, AccessEntry, AccessEntryEmail
from audit.admin_tokens import ApiTokenAdmin  # noqa: F401  (registers itself)
from audit.case_export_admin import CaseExportAdmin  # noqa: F401  (registers itself)
from audit.erasure_admin import ErasureRequestRecordAdmin  # noqa: F401  (registers itself)
from audit.hold_admin import LegalHoldAdmin  # noqa: F401  (registers itself)
from audit.models import MUTATION_TRAIL_FIELDS, AnsweringRunEmail, AnsweringRunEntry, MutationEntry
from mailbox.admin_read_only import ReadOnly


class EmailRowsInline(ReadOnly, admin.TabularInline):
    """An entry's email rows, each linking to the stored email's page."""

    extra = 0
    can_delete = False

    @admin.display(description=_("Email"))
    def email_link(self, row: AnsweringRunEmail | AccessEntryEmail) -> str:
        url = reverse("admin:mailbox_email_change", args=[row.email_id])
        return format_html('<a href="{}">{}</a>', url, row.email_id)


class AnsweringRunEmailInline(EmailRowsInline):
    model = AnsweringRunEmail
    fields = ["position", "email_link", "cited", "relied_on_rank"]
    readonly_fields = fields  # type: ignore[assignment]  # names only; the stubs widen fields to groups


# Whoever may read the trails through the compliance API reads every account's entries here too.
TRAIL_READER = "audit.view_audit"


@admin.register(AnsweringRunEntry)
class AnsweringRunEntryAdmin(ReadOnly, PeopleScoped):
    account_roles = people.READ_ROLES
    see_all_permission = TRAIL_READER
    inlines = [AnsweringRunEmailInline]
    list_display = [
        "ended_at",
        "account",
        "run_id",
        "outcome",
        "email_count",
        "retrieval_ceiling_reached",
        "relevance_fell_back",
    ]
    list_filter = ["account", "outcome", "ended_at", "retrieval_ceiling_reached", "relevance_fell_back"]
    date_hierarchy = "ended_at"
    search_fields = ["=run_id"]
    list_select_related = ["account"]
    fields = [
        "run_id",
        "account",
        "chat_alias",
        "instruction_version",
        "started_at",
        "ended_at",
        "outcome",
        "retrieval_ceiling_reached",
        "relevance_fell_back",
    ]
    readonly_fields = fields  # type: ignore[assignment]  # names only; the stubs widen fields to groups

    @admin.display(description=_("Emails retrieved"))
    def email_count(self, entry: AnsweringRunEntry) -> int:
        return entry.emails.count()


@admin.register(MutationEntry)
class MutationEntryAdmin(ReadOnly, PeopleScoped):
    account_roles = people.READ_ROLES
    see_all_permission = TRAIL_READER
    list_display = [
        "requested_at",
        "kind",
        "account_identifier",
        "requester_kind",
        "requester",
        "outcome",
        "failure_code",
    ]
    list_filter = ["account", "kind", "outcome", "requester_kind", "requested_at"]
    date_hierarchy = "requested_at"
    search_fields = ["=account_identifier", "=message_id_hash"]
    # The trail's fields less the id, with the account's link before the identifier it recorded.
    fields = [*MUTATION_TRAIL_FIELDS[1:4], "account", *MUTATION_TRAIL_FIELDS[4:], "retention_days"]
    readonly_fields = fields  # type: ignore[assignment]  # names only; the stubs widen fields to groups


class AccessEntryEmailInline(EmailRowsInline):
    model = AccessEntryEmail
    # Not the model's plural, which Django makes "email returneds" by appending an "s".
    verbose_name_plural = _("emails returned")
    fields = ["position", "email_link"]
    readonly_fields = fields  # type: ignore[assignment]  # names only; the stubs widen fields to groups


@admin.register(AccessEntry)
class AccessEntryAdmin(ReadOnly, PeopleScoped):
    """Who read which account's mail: compliance staff hold its view permission (audit 0008)."""

    account_roles = people.READ_ROLES
    inlines = [AccessEntryEmailInline]
    list_display = ACCESS_TRAIL_FIELDS
    list_filter = ["account", "channel", "action", "requester_kind", "accessed_at"]
    date_hierarchy = "accessed_at"
    search_fields = ["=account_identifier", "=requester", "=owner"]
    fields = [*ACCESS_TRAIL_FIELDS[:2], "account", *ACCESS_TRAIL_FIELDS[2:], "retention_days"]
    readonly_fields = fields  # type: ignore[assignment]  # names only; the stubs widen fields to groups

"""Admin for erasure requests: a read-only list and page, and execution behind a confirmation.

Executing asks for the person's addresses again (the record keeps only their keyed
hashes) and an explicit confirmation; it needs the `audit.execute_erasurerequestrecord`
permission, and a person other than the requester (58002) unless the deployment is
single-operator (MAILFATHOM_ERASURE_SINGLE_OPERATOR). See docs/operations/compliance.md (Erasure requests).
"""

from __future__ import annotations

import uuid
from typing import Any

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import URLPattern, path, reverse
from django.utils.html import format_html, format_html_join
from django.utils.translation import gettext, ngettext
from django.utils.translation import gettext_lazy as _

from audit.erasure_models import ErasureRequesterKind, ErasureRequestRecord, ErasureStatus
from audit.services.erasure import (
    Requester,
    abandon_erasure_request,
    execute_erasure_request,
    preview_counts,
)
from mailbox.admin_read_only import ReadOnly
from mailbox.services.erasure import KINDS, MAX_ADDRESSES
from mailfathom.core.errors import MailFathomError
from mailfathom.core.text import MAX_ADDRESS_LENGTH

EXECUTE_PERMISSION = "audit.execute_erasurerequestrecord"
# The column headings of the preview on the execution page, one per kind of row counted.
KIND_HEADINGS = {
    "emails": _("emails"),
    "raw_messages": _("raw messages"),
    "attachments": _("attachments"),
    "participants": _("participants"),
    "passages": _("passages"),
    "repair_requests": _("repair requests"),
}


class ExecuteErasureForm(forms.Form):
    addresses = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 4, "autocomplete": "off"}),
        max_length=MAX_ADDRESSES * (MAX_ADDRESS_LENGTH + 2),
        label=_("Addresses"),
        help_text=_("The same addresses the request was made for, one per line."),
    )
    accounts_only = forms.BooleanField(
        label=_("Suppress the erased mail only in the accounts it is erased from"),
        required=False,
        help_text=_(
            "Unticked: the erased messages are kept out of every account of the deployment. "
            "Starts as the request asked."
        ),
    )
    confirm = forms.BooleanField(
        label=_("I understand that the matched mail is erased from MailFathom for good."), required=True
    )

    def address_list(self) -> list[str]:
        return [line.strip() for line in self.cleaned_data["addresses"].splitlines() if line.strip()]


@admin.register(ErasureRequestRecord)
class ErasureRequestRecordAdmin(ReadOnly, admin.ModelAdmin):
    list_display = ["requested_at", "id", "status", "requested_by_kind", "requested_by", "executed_at"]
    list_filter = ["status", "requested_by_kind", "requested_at"]
    date_hierarchy = "requested_at"
    search_fields = ["=id"]
    actions = ["abandon"]
    fields = [
        "id",
        "status",
        "requested_by",
        "requested_by_kind",
        "requested_by_person",
        "requested_at",
        "account_ids",
        "received_on_or_after",
        "received_before",
        "accounts_only",
        "address_hashes",
        "preview_table",
        "executed_at",
        "executed_by",
        "executed_by_kind",
        "executed_by_person",
        "single_operator",
        "statement_counts",
        "suppressions",
        "removed_rows",
        "cleanup_completed_at",
        "statement_signed_at",
        "failure_code",
        "links",
    ]
    readonly_fields = fields  # type: ignore[assignment]  # names only; the stubs widen fields to groups

    def get_actions(self, request: HttpRequest) -> dict[str, Any]:
        actions = super().get_actions(request)
        if not request.user.has_perm(EXECUTE_PERMISSION):
            actions.pop("abandon", None)
        return actions

    @admin.display(description=_("Would erase (preview)"))
    def preview_table(self, record: ErasureRequestRecord) -> str:
        rows = [
            (counts.account_id, ", ".join(f"{getattr(counts, k)} {k.replace('_', ' ')}" for k in KINDS))
            for counts in preview_counts(record)
        ]
        if not rows:
            return gettext("No stored email matched.")
        return format_html_join("", "<div>{}: {}</div>", rows)

    @admin.display(description=_("Statement and execution"))
    def links(self, record: ErasureRequestRecord) -> str:
        statement = reverse("audit:erasure-statement", args=[record.id])
        if record.status != ErasureStatus.PREVIEWED:
            return format_html('<a href="{}">{}</a>', statement, gettext("Printable statement"))
        execute = reverse("admin:audit_erasurerequestrecord_execute", args=[record.id])
        return format_html(
            '<a href="{}">{}</a> · <a href="{}">{}</a>',
            statement,
            gettext("Printable statement"),
            execute,
            gettext("Execute this request…"),
        )

    @admin.action(description=_("Abandon the selected requests (previewed ones only)"))
    def abandon(self, request: HttpRequest, queryset: QuerySet[ErasureRequestRecord]) -> None:
        if not request.user.has_perm(EXECUTE_PERMISSION):
            raise PermissionDenied
        abandoned = 0
        for record_id in queryset.filter(status=ErasureStatus.PREVIEWED).values_list("pk", flat=True):
            abandon_erasure_request(record_id)
            abandoned += 1
        self.message_user(
            request,
            ngettext(
                "%(count)d erasure request abandoned.", "%(count)d erasure requests abandoned.", abandoned
            )
            % {"count": abandoned},
        )

    def get_urls(self) -> list[URLPattern]:
        own = [
            path(
                "<uuid:record_id>/execute/",
                self.admin_site.admin_view(self.execute_view),
                name="audit_erasurerequestrecord_execute",
            )
        ]
        return own + super().get_urls()

    def execute_view(self, request: HttpRequest, record_id: uuid.UUID) -> HttpResponse:
        """Ask for the addresses and a confirmation, then execute; never echo an address back."""
        if not request.user.has_perm(EXECUTE_PERMISSION):
            raise PermissionDenied
        record = self.get_object(request, str(record_id))
        if record is None:
            return self._get_obj_does_not_exist_redirect(request, self.opts, str(record_id))  # type: ignore[attr-defined]  # Django's own helper, absent from the stubs
        form = ExecuteErasureForm(request.POST or None, initial={"accounts_only": record.accounts_only})
        if request.method == "POST" and form.is_valid():
            name = request.user.get_username()
            requester = Requester(name=name, kind=ErasureRequesterKind.USER, person=name)
            try:
                statement = execute_erasure_request(
                    record.id,
                    form.address_list(),
                    requester=requester,
                    accounts_only=form.cleaned_data["accounts_only"],
                )
            except MailFathomError as error:
                messages.error(request, str(error))
            else:
                messages.success(
                    request,
                    ngettext(
                        "Erasure request executed: %(count)d email erased.",
                        "Erasure request executed: %(count)d emails erased.",
                        statement.total("emails"),
                    )
                    % {"count": statement.total("emails")},
                )
                return HttpResponseRedirect(reverse("audit:erasure-statement", args=[record.id]))
            # Never render the typed addresses back into the page.
            form = ExecuteErasureForm(initial={"accounts_only": record.accounts_only})
        context = {
            **self.admin_site.each_context(request),
            "opts": self.opts,
            "title": gettext("Execute erasure request"),
            "record": record,
            "preview": preview_counts(record),
            "kinds": [KIND_HEADINGS.get(kind, kind.replace("_", " ")) for kind in KINDS],
            "form": form,
        }
        return TemplateResponse(request, "audit/erasure_execute.html", context)

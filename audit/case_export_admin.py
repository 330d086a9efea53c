"""Admin for case exports: start one, watch its progress, download its zip. Compliance staff only.

Every page here needs `audit.export_case` (granted to the Compliance group); a mail operator
without it gets 403 on the list, the form, the status JSON and the download alike. The form
calls audit.services.case_export, which holds every bound; the list refreshes its progress
bars from a small JSON status URL (mailfathom/static/mailfathom/case_exports.js).
See docs/operations/compliance.md (Case exports).
"""

from __future__ import annotations

import uuid
from datetime import UTC, date, datetime, time
from typing import Any

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.db import transaction
from django.db.models import Model
from django.http import FileResponse, Http404, HttpRequest, HttpResponse, HttpResponseRedirect, JsonResponse
from django.http.response import HttpResponseBase
from django.template.defaultfilters import filesizeformat
from django.template.response import TemplateResponse
from django.urls import URLPattern, path, reverse
from django.utils.html import format_html
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from accounts.models import MailAccount
from accounts.services.caller import person
from audit.case_export_models import EXPORT_PERMISSION, CaseExport, CaseExportStatus
from audit.services import case_export
from audit.services.access_trail import AccessChannel, record_access
from audit.services.arguments import MAX_ADDRESSES
from audit.tasks import run_case_export_task
from mailfathom.core.errors import MailFathomError
from mailfathom.core.text import MAX_ADDRESS_LENGTH

STATUS_ROWS = 50  # the most recent exports the status JSON reports
ACTIVE = (CaseExportStatus.QUEUED, CaseExportStatus.RUNNING)


class CaseExportForm(forms.Form):
    case_reference = forms.CharField(
        max_length=case_export.MAX_CASE_REFERENCE_LENGTH,
        required=False,
        label=_("Case reference"),
        help_text=_("Your own reference for the case; written into the manifest."),
    )
    accounts = forms.ModelMultipleChoiceField(
        queryset=MailAccount.objects.order_by("account_id"),
        to_field_name="account_id",
        required=False,
        widget=forms.CheckboxSelectMultiple,
        label=_("Accounts"),
        help_text=_("None ticked: every account."),
    )
    addresses = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 3, "autocomplete": "off"}),
        required=False,
        max_length=MAX_ADDRESSES * (MAX_ADDRESS_LENGTH + 2),
        label=_("Addresses"),
        help_text=_(
            "A person: their addresses, one per line, matched as sender or any recipient. "
            "Empty: anyone's mail."
        ),
    )
    received_on_or_after = forms.DateField(
        label=_("Received on or after"),
        required=False,
        widget=forms.DateInput(attrs={"type": "date"}),
        help_text=_("From this day (UTC)."),
    )
    received_before = forms.DateField(
        required=False,
        widget=forms.DateInput(attrs={"type": "date"}),
        label=_("Received before"),
        help_text=_("Up to, not including, this day (UTC)."),
    )

    def address_list(self) -> list[str]:
        return [line.strip() for line in self.cleaned_data["addresses"].splitlines() if line.strip()]

    def selection(self) -> case_export.CaseSelection:
        data = self.cleaned_data
        return case_export.case_selection(
            account_ids=[account.account_id for account in data["accounts"]],
            addresses=self.address_list(),
            received_on_or_after=_midnight(data["received_on_or_after"]),
            received_before=_midnight(data["received_before"]),
        )


def _midnight(day: date | None) -> datetime | None:
    return datetime.combine(day, time.min, tzinfo=UTC) if day is not None else None


def queue_export(record: CaseExport, addresses: list[str]) -> None:
    """Hand the export to a worker once the record is committed (tests replace this)."""
    transaction.on_commit(lambda: run_case_export_task.delay(str(record.id), addresses))


@admin.register(CaseExport)
class CaseExportAdmin(admin.ModelAdmin):  # type: ignore[type-arg]  # the generic parameter is the model
    list_display = [
        "requested_at",
        "case_reference",
        "requested_by",
        "status_badge",
        "progress_bar",
        "exported",
        "missing",
        "file_size",
        "download_link",
    ]
    list_display_links = ["requested_at"]
    list_filter = ["status", "requested_at"]
    date_hierarchy = "requested_at"
    fields = [
        "id",
        "status",
        "failure_code",
        "case_reference",
        "requested_by",
        "requested_at",
        "selection",
        "started_at",
        "finished_at",
        "total_messages",
        "done_messages",
        "exported_messages",
        "missing_messages",
        "selected_bytes",
        "file_bytes",
        "manifest_sha256",
        "file_sha256",
        "expires_at",
        "file_deleted_at",
        "downloads",
        "last_downloaded_at",
        "last_downloaded_by",
        "download_link",
    ]
    readonly_fields = fields  # type: ignore[assignment]  # names only; the stubs widen fields to groups

    class Media:
        js = ("mailfathom/case_exports.js",)

    # --- Who may: compliance staff holding audit.export_case, and nobody else ---------------

    def has_module_permission(self, request: HttpRequest) -> bool:
        return request.user.has_perm(EXPORT_PERMISSION)

    def has_view_permission(self, request: HttpRequest, obj: Model | None = None) -> bool:
        return request.user.has_perm(EXPORT_PERMISSION)

    def has_add_permission(self, request: HttpRequest) -> bool:
        return request.user.has_perm(EXPORT_PERMISSION)

    def has_change_permission(self, request: HttpRequest, obj: Model | None = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Model | None = None) -> bool:
        return False

    def _require(self, request: HttpRequest) -> None:
        if not request.user.has_perm(EXPORT_PERMISSION):
            raise PermissionDenied

    # --- Columns -------------------------------------------------------------------------------

    @admin.display(description=_("Status"), ordering="status")
    def status_badge(self, record: CaseExport) -> str:
        code = f" ({record.failure_code})" if record.failure_code else ""
        return format_html(
            '<span class="case-export-status" data-export="{}" data-status="{}">{}{}</span>',
            record.id,
            record.status,
            record.get_status_display(),
            code,
        )

    @admin.display(description=_("Progress"))
    def progress_bar(self, record: CaseExport) -> str:
        return format_html(
            '<progress class="case-export-progress" data-export="{}" value="{}" max="100">{}%</progress> '
            '<span class="case-export-count" data-export="{}">{} / {}</span>',
            record.id,
            record.percent,
            record.percent,
            record.id,
            record.done_messages,
            record.total_messages,
        )

    @admin.display(description=_("Exported"), ordering="exported_messages")
    def exported(self, record: CaseExport) -> int:
        return record.exported_messages

    @admin.display(description=_("Missing"), ordering="missing_messages")
    def missing(self, record: CaseExport) -> int:
        return record.missing_messages

    @admin.display(description=_("Zip"))
    def file_size(self, record: CaseExport) -> str:
        return filesizeformat(record.file_bytes) if record.file_bytes else ""

    @admin.display(description=_("Download"))
    def download_link(self, record: CaseExport) -> str:
        if record.status != CaseExportStatus.DONE or not record.file_name:
            return ""
        url = reverse("admin:audit_caseexport_download", args=[record.id])
        return format_html('<a class="case-export-download" href="{}">{}</a>', url, gettext("Download zip"))

    # --- Pages ---------------------------------------------------------------------------------

    def get_urls(self) -> list[URLPattern]:
        own = [
            path(
                "status.json",
                self.admin_site.admin_view(self.status_view),
                name="audit_caseexport_status",
            ),
            path(
                "<uuid:export_id>/download/",
                self.admin_site.admin_view(self.download_view),
                name="audit_caseexport_download",
            ),
        ]
        return own + super().get_urls()

    def add_view(
        self, request: HttpRequest, form_url: str = "", extra_context: dict[str, Any] | None = None
    ) -> HttpResponse:
        """The form that starts an export; the worker writes it, the list shows its progress."""
        self._require(request)
        form = CaseExportForm(request.POST or None)
        if request.method == "POST" and form.is_valid():
            try:
                selection = form.selection()
                record = case_export.start_case_export(
                    selection,
                    requested_by=request.user.get_username(),
                    case_reference=form.cleaned_data["case_reference"],
                )
            except MailFathomError as error:
                messages.error(request, str(error))
            else:
                queue_export(record, list(selection.addresses))
                messages.success(request, gettext("Case export started; its progress shows below."))
                return HttpResponseRedirect(reverse("admin:audit_caseexport_changelist"))
        context = {
            **self.admin_site.each_context(request),
            "opts": self.opts,
            "title": gettext("Start a case export"),
            "form": form,
            "max_bytes": case_export.max_bytes(),
            "retention_days": case_export.retention_days(),
        }
        return TemplateResponse(request, "audit/case_export_start.html", context)

    def status_view(self, request: HttpRequest) -> JsonResponse:
        """The latest exports' progress, for the list's script."""
        self._require(request)
        rows = []
        for record in CaseExport.objects.order_by("-requested_at")[:STATUS_ROWS]:
            rows.append(
                {
                    "id": str(record.id),
                    "status": record.status,
                    "done": record.done_messages,
                    "total": record.total_messages,
                    "percent": record.percent,
                    "failureCode": record.failure_code,
                }
            )
        return JsonResponse({"exports": rows})

    def download_view(self, request: HttpRequest, export_id: uuid.UUID) -> HttpResponseBase:
        """The zip, as an attachment, to compliance staff only; the download is counted."""
        self._require(request)
        download = case_export.open_download(export_id, downloaded_by=request.user.get_username())
        if download is None:
            raise Http404("No finished case export with this identifier holds a file.")
        # Mail left the deployment: each account exported records who took it (the emails are
        # named by the export's manifest, not repeated here).
        record_access(
            AccessChannel.ADMIN,
            "case export download",
            person(request.user),
            [],
            case_export.accounts_of(export_id),
        )
        return FileResponse(
            open(download.path, "rb"),  # FileResponse closes it
            as_attachment=True,
            filename=download.file_name,
            content_type="application/zip",
        )

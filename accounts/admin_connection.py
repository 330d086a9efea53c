"""Admin page "Test connection and map folders" for one mail account.

GET logs in to the account's IMAP server (read-only) and shows its folders with suggested
aliases and roles; POST creates the mappings the operator ticked. Wired into
MailAccountAdmin.get_urls() as `admin:accounts_mailaccount_test_connection`, wrapped in
`admin_site.admin_view` (staff login, CSRF protection, no caching).
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin, messages
from django.contrib.admin.utils import quote, unquote
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseNotAllowed, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import reverse

from accounts.models import FolderMapping, FolderRole, MailAccount
from accounts.services.connection import ConnectionReport, apply_suggested_mappings, test_connection

TEMPLATE = "admin/accounts/mailaccount/test_connection.html"


class FolderChoiceForm(forms.Form):
    """One row of the server's folder table: whether to map it, and as what."""

    apply = forms.BooleanField(label="Map", required=False)
    remote_name = forms.CharField(max_length=1000, widget=forms.HiddenInput)
    flags = forms.CharField(required=False, widget=forms.HiddenInput)  # shown, never stored
    alias = forms.CharField(max_length=256, required=False, strip=True)
    role = forms.ChoiceField(choices=[("", "(none)"), *FolderRole.choices], required=False)

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        if cleaned.get("apply") and not (cleaned.get("alias") or "").strip():
            self.add_error("alias", "A folder to map needs an alias.")
        return cleaned


FolderChoiceFormSet = forms.formset_factory(FolderChoiceForm, extra=0, max_num=5000, absolute_max=5000)


def _initial_rows(account: MailAccount, report: ConnectionReport) -> list[dict[str, Any]]:
    """Pre-fill a row per server folder: tick those with a free role that are not yet mapped."""
    mapped = dict(FolderMapping.objects.filter(account=account).values_list("remote_name", "alias"))
    taken_roles = set(
        FolderMapping.objects.filter(account=account).exclude(role="").values_list("role", flat=True)
    )
    rows = []
    # INBOX first, then the folders with a suggested role, then the rest by name.
    for folder in sorted(
        report.folders, key=lambda f: (f.suggested_role != "inbox", not f.suggested_role, f.name)
    ):
        role = "" if folder.suggested_role in taken_roles else folder.suggested_role
        rows.append(
            {
                "apply": bool(role) and folder.selectable and folder.name not in mapped,
                "remote_name": folder.name,
                "flags": " ".join(folder.flags),
                "alias": folder.suggested_alias,
                "role": role,
                "mapped_as": mapped.get(folder.name, ""),
            }
        )
    return rows


def test_connection_view(model_admin: admin.ModelAdmin, request: HttpRequest, object_id: str) -> HttpResponse:
    """Test the account's IMAP login and list its folders (GET); map the ticked ones (POST).

    404 for an unknown account, 403 without change permission on it. A failed login is
    not an error of this page: it shows the report's one-sentence explanation.
    """
    account = model_admin.get_object(request, unquote(object_id))
    if account is None:
        raise Http404("No mail account with this identifier.")
    if not model_admin.has_change_permission(request, account):
        raise PermissionDenied
    if request.method not in ("GET", "HEAD", "POST"):
        return HttpResponseNotAllowed(["GET", "POST"])

    report: ConnectionReport | None = None
    if request.method == "POST":
        formset = FolderChoiceFormSet(request.POST, prefix="folder")
        if formset.is_valid():
            chosen = [
                (row["remote_name"], row["alias"], row["role"])
                for row in formset.cleaned_data
                if row.get("apply")
            ]
            created = apply_suggested_mappings(account, chosen)
            noun = "mapping" if created == 1 else "mappings"
            messages.success(request, f"{created} folder {noun} created.")
            change_url = reverse(
                f"admin:{account._meta.app_label}_{account._meta.model_name}_change",
                args=[quote(account.pk)],
                current_app=model_admin.admin_site.name,
            )
            return HttpResponseRedirect(change_url)
    else:
        report = test_connection(account)
        formset = FolderChoiceFormSet(initial=_initial_rows(account, report), prefix="folder")

    context = {
        **model_admin.admin_site.each_context(request),
        "title": f"Test connection: {account}",
        "subtitle": None,
        "opts": account._meta,
        "original": account,
        "account": account,
        "report": report,
        "formset": formset,
        "has_view_permission": model_admin.has_view_permission(request, account),
    }
    return TemplateResponse(request, TEMPLATE, context)

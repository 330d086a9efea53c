"""Admin pages "Test connection and map folders" for one mail account.

test_and_map_view is the account page's one-click button (test the saved settings, map
INBOX and the SPECIAL-USE folders); test_connection_view is the page for the rest: settings
not saved yet, and folders picked by hand. See docs/operations/accounts.md.
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

from accounts.models import FolderMapping, FolderRole, MailAccount, Security
from accounts.services.connection import (
    ENDPOINT_LABELS,
    ConnectionReport,
    Endpoint,
    MappedFolder,
    apply_suggested_mappings,
    test_and_map,
    test_connection,
    visible_by_default,
)

TEMPLATE = "admin/accounts/mailaccount/test_connection.html"
TEST_BUTTON = "_test_connection"


class ConnectionForm(forms.Form):
    """The settings to test, pre-filled from the saved account; the password is never shown."""

    imap_host = forms.CharField(label=ENDPOINT_LABELS["host"], max_length=253)
    imap_port = forms.IntegerField(label=ENDPOINT_LABELS["port"], min_value=1, max_value=65535)
    security = forms.ChoiceField(label=ENDPOINT_LABELS["security"].capitalize(), choices=Security.choices)
    username = forms.CharField(label=ENDPOINT_LABELS["username"], max_length=320)
    password = forms.CharField(
        label="IMAP password",
        required=False,
        strip=False,
        widget=forms.PasswordInput(render_value=False, attrs={"autocomplete": "off"}),
        help_text=(
            "Leave blank to use the stored password; it is only sent when the settings above "
            "are the saved ones. Nothing typed here is stored."
        ),
    )

    @classmethod
    def for_account(cls, account: MailAccount) -> ConnectionForm:
        saved = Endpoint.of(account)
        return cls(
            initial={
                "imap_host": saved.host,
                "imap_port": saved.port,
                "security": saved.security,
                "username": saved.username,
            }
        )

    def endpoint(self) -> Endpoint:
        data = self.cleaned_data
        return Endpoint(data["imap_host"], data["imap_port"], data["security"], data["username"])


class FolderChoiceForm(forms.Form):
    """One row of the server's folder table: whether to map it, and as what."""

    apply = forms.BooleanField(label="Map", required=False)
    remote_name = forms.CharField(max_length=1000, widget=forms.HiddenInput)
    flags = forms.CharField(required=False, widget=forms.HiddenInput)  # shown, never stored
    alias = forms.CharField(max_length=256, required=False, strip=True)
    role = forms.ChoiceField(choices=[("", "(none)"), *FolderRole.choices], required=False)
    visible_to_tools = forms.BooleanField(
        label="Visible to tools",
        required=False,
        help_text="Unticked: the folder's mail is copied, but no MCP tool or answer reads it.",
    )

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
                "described": folder.described,
                "messages": folder.messages,
                "alias": folder.suggested_alias,
                "role": role,
                # Junk and Trash start hidden (HIDDEN_ROLES); the box is the operator's to tick.
                "visible_to_tools": visible_by_default(folder.suggested_role),
                "mapped_as": mapped.get(folder.name, ""),
            }
        )
    return rows


def _change_url(model_admin: admin.ModelAdmin, account: MailAccount) -> str:
    return reverse(
        f"admin:{account._meta.app_label}_{account._meta.model_name}_change",
        args=[quote(account.pk)],
        current_app=model_admin.admin_site.name,
    )


def _mapped_words(mapped: list[MappedFolder]) -> str:
    """ "inbox (INBOX, 3 messages), junk (Junk, 1 message, hidden from tools)"."""
    parts = []
    for folder in mapped:
        details = [folder.remote_name]
        if folder.messages is not None:
            details.append(f"{folder.messages} message{'' if folder.messages == 1 else 's'}")
        if not folder.visible_to_tools:
            details.append("hidden from tools")
        parts.append(f"{folder.alias} ({', '.join(details)})")
    return "; ".join(parts)


def test_and_map_view(model_admin: admin.ModelAdmin, request: HttpRequest, object_id: str) -> HttpResponse:
    """One click on the account page: test the saved settings and map the suggested folders.

    POST only (the account page's button); 404 for an unknown account, 403 without change
    permission. The result is a message on the account page: the folders mapped with their
    message counts, or the failure's code and sentence. Unsaved edits on that page are not
    read: the saved settings are tested.
    """
    account = model_admin.get_object(request, unquote(object_id))
    if account is None:
        raise Http404("No mail account with this identifier.")
    if not model_admin.has_change_permission(request, account):
        raise PermissionDenied
    if request.method != "POST":
        return HttpResponseNotAllowed(["POST"])
    report, mapped = test_and_map(account)
    if not report.ok:
        code = f" ({report.code})" if report.code is not None else ""
        messages.error(request, f"Connection test failed{code}: {report.message}")
    elif mapped:
        noun = "folder" if len(mapped) == 1 else "folders"
        messages.success(request, f"{report.message} Mapped {len(mapped)} {noun}: {_mapped_words(mapped)}.")
    else:
        messages.success(
            request,
            f"{report.message} No new folder to map: the server's special folders are mapped "
            'already. Use "Choose folders by hand" to map others.',
        )
    return HttpResponseRedirect(_change_url(model_admin, account))


def test_connection_view(model_admin: admin.ModelAdmin, request: HttpRequest, object_id: str) -> HttpResponse:
    """Show the settings (GET); test them (POST with the test button); map ticked folders (POST).

    404 for an unknown account, 403 without change permission on it. A failed login is
    not an error of this page: it shows the report's one-sentence explanation. A blank
    password with settings that differ from the saved ones is an error on the password
    field, and nothing connects.
    """
    account = model_admin.get_object(request, unquote(object_id))
    if account is None:
        raise Http404("No mail account with this identifier.")
    if not model_admin.has_change_permission(request, account):
        raise PermissionDenied
    if request.method not in ("GET", "HEAD", "POST"):
        return HttpResponseNotAllowed(["GET", "POST"])

    report: ConnectionReport | None = None
    connection_form = ConnectionForm.for_account(account)
    formset = FolderChoiceFormSet(initial=[], prefix="folder")
    unsaved_settings = False
    if request.method == "POST" and TEST_BUTTON in request.POST:
        connection_form = ConnectionForm(request.POST)
        if connection_form.is_valid():
            endpoint = connection_form.endpoint()
            report = test_connection(
                account, endpoint=endpoint, password=connection_form.cleaned_data["password"] or None
            )
            unsaved_settings = endpoint.differences(Endpoint.of(account)) != []
            if report.kind == "password_needed":
                connection_form.add_error("password", report.message)
                report = None
            elif report.ok and not unsaved_settings:  # only the saved server's folders are mapped
                formset = FolderChoiceFormSet(initial=_initial_rows(account, report), prefix="folder")
    elif request.method == "POST":
        formset = FolderChoiceFormSet(request.POST, prefix="folder")
        if formset.is_valid():
            chosen = [
                (row["remote_name"], row["alias"], row["role"], bool(row.get("visible_to_tools")))
                for row in formset.cleaned_data
                if row.get("apply")
            ]
            created = apply_suggested_mappings(account, chosen)
            noun = "mapping" if created == 1 else "mappings"
            messages.success(request, f"{created} folder {noun} created.")
            return HttpResponseRedirect(_change_url(model_admin, account))

    context = {
        **model_admin.admin_site.each_context(request),
        "title": f"Test connection: {account}",
        "subtitle": None,
        "opts": account._meta,
        "original": account,
        "account": account,
        "report": report,
        "connection_form": connection_form,
        "test_button": TEST_BUTTON,
        "unsaved_settings": unsaved_settings,
        "formset": formset,
        "has_view_permission": model_admin.has_view_permission(request, account),
    }
    return TemplateResponse(request, TEMPLATE, context)

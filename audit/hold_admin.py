"""Admin for legal holds: placed and released by compliance staff only, never edited or deleted.

Placing and releasing need `audit.manage_legalhold` (the Compliance group holds it); reading
needs it or `audit.view_legalhold`. A placed hold is read-only: what it covers does not
change, it is released (with a reason) and a new one placed instead. Addresses typed when
placing are hashed by audit.services.holds and never shown again.
See docs/operations/compliance.md (Legal holds).
"""

from __future__ import annotations

import uuid
from typing import Any

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import URLPattern, path, reverse
from django.utils.html import format_html
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from accounts.models import MailAccount
from audit.hold_models import HoldRequesterKind, LegalHold
from audit.services.arguments import MAX_ADDRESSES
from audit.services.hold_requests import MAX_REASON_LENGTH, hold_request
from audit.services.holds import Requester, place_hold, release_hold
from mailfathom.core.errors import MailFathomError
from mailfathom.core.text import MAX_ADDRESS_LENGTH

MANAGE_PERMISSION = "audit.manage_legalhold"
VIEW_PERMISSION = "audit.view_legalhold"
_FIELD_OF_ARGUMENT = {
    "name": "name",
    "reason": "reason",
    "scope": "scope",
    "accountIds": "accounts",
    "addresses": "addresses",
    "receivedOnOrAfter": "received_on_or_after",
    "receivedBefore": "received_before",
}


class PlaceHoldForm(forms.ModelForm):
    accounts = forms.ModelMultipleChoiceField(
        queryset=MailAccount.objects.order_by("account_id"),
        to_field_name="account_id",
        required=False,
        label=_("Accounts"),
        help_text=_("For an account hold, the accounts held; for a case, the accounts it is limited to."),
    )
    addresses = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 4, "autocomplete": "off"}),
        required=False,
        max_length=MAX_ADDRESSES * (MAX_ADDRESS_LENGTH + 2),
        label=_("Addresses"),
        help_text=_(
            "For a person hold, the person's addresses; for a case, its participants. One per "
            "line. Kept only as keyed hashes: they cannot be read back."
        ),
    )

    class Meta:
        model = LegalHold
        fields = ["name", "reason", "scope", "received_on_or_after", "received_before"]

    def address_list(self) -> list[str]:
        return [line.strip() for line in self.cleaned_data.get("addresses", "").splitlines() if line.strip()]

    def hold_arguments(self) -> dict[str, Any]:
        data = self.cleaned_data
        return {
            "name": data.get("name", ""),
            "reason": data.get("reason", ""),
            "scope": data.get("scope", ""),
            "account_ids": [account.account_id for account in data.get("accounts") or ()],
            "addresses": self.address_list(),
            "received_on_or_after": data.get("received_on_or_after"),
            "received_before": data.get("received_before"),
        }

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        if not self.errors:
            try:
                hold_request(**self.hold_arguments())
            except MailFathomError as error:
                self.add_error(_FIELD_OF_ARGUMENT.get(error.argument or "", None), error.message)
        return cleaned


class ReleaseHoldForm(forms.Form):
    reason = forms.CharField(
        label=_("Why the hold is released"),
        widget=forms.Textarea(attrs={"rows": 3}),
        max_length=MAX_REASON_LENGTH,
        help_text=_("Kept on the hold's record. No mail content, no addresses."),
    )
    confirm = forms.BooleanField(
        label=_("I understand that retention, erasure and deletion apply to this mail again."), required=True
    )


@admin.register(LegalHold)
class LegalHoldAdmin(admin.ModelAdmin):
    form = PlaceHoldForm
    list_display = ["name", "scope", "created_at", "created_by", "released_at", "released_by"]
    list_filter = ["scope", ("released_at", admin.EmptyFieldListFilter), "created_at"]
    date_hierarchy = "created_at"
    search_fields = ["name", "=id"]
    add_fields = [
        "name",
        "reason",
        "scope",
        "accounts",
        "addresses",
        "received_on_or_after",
        "received_before",
    ]
    shown_fields = [
        "id",
        "name",
        "reason",
        "scope",
        "account_ids",
        "address_count",
        "received_on_or_after",
        "received_before",
        "created_by",
        "created_by_kind",
        "created_at",
        "released_by",
        "released_by_kind",
        "released_at",
        "release_reason",
        "release_link",
    ]

    def get_fields(self, request: HttpRequest, obj: LegalHold | None = None) -> Any:
        return self.add_fields if obj is None else self.shown_fields

    def get_readonly_fields(self, request: HttpRequest, obj: LegalHold | None = None) -> Any:
        return () if obj is None else self.shown_fields

    def has_add_permission(self, request: HttpRequest) -> bool:
        return request.user.has_perm(MANAGE_PERMISSION)

    def has_view_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return request.user.has_perm(VIEW_PERMISSION) or request.user.has_perm(MANAGE_PERMISSION)

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False  # a hold is released and replaced, never edited

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False  # the row is the record of the hold

    def save_model(self, request: HttpRequest, obj: LegalHold, form: Any, change: bool) -> None:
        """Place the hold through the use case, and let the admin carry on with the row it made."""
        requester = Requester(name=request.user.get_username(), kind=HoldRequesterKind.USER)
        placed = place_hold(requester=requester, **form.hold_arguments())
        for field in LegalHold._meta.concrete_fields:
            setattr(obj, field.attname, getattr(placed, field.attname))
        obj._state.adding = False
        obj._state.db = placed._state.db

    def save_related(self, request: HttpRequest, form: Any, formsets: Any, change: bool) -> None:
        return None  # no relations; the form's extra fields were read by save_model

    @admin.display(description=_("Addresses held (hashes)"))
    def address_count(self, hold: LegalHold) -> int:
        return len(hold.address_hashes)

    @admin.display(description=_("Release"))
    def release_link(self, hold: LegalHold) -> str:
        if not hold.is_active:
            return gettext("Released.")
        url = reverse("admin:audit_legalhold_release", args=[hold.id])
        return format_html('<a href="{}">{}</a>', url, gettext("Release this hold…"))

    def get_urls(self) -> list[URLPattern]:
        own = [
            path(
                "<uuid:hold_id>/release/",
                self.admin_site.admin_view(self.release_view),
                name="audit_legalhold_release",
            )
        ]
        return own + super().get_urls()

    def release_view(self, request: HttpRequest, hold_id: uuid.UUID) -> HttpResponse:
        """Ask for a reason and a confirmation, then release the hold."""
        if not request.user.has_perm(MANAGE_PERMISSION):
            raise PermissionDenied
        hold = self.get_object(request, str(hold_id))
        if hold is None:
            return self._get_obj_does_not_exist_redirect(request, self.opts, str(hold_id))  # type: ignore[attr-defined]  # Django's own helper, absent from the stubs
        form = ReleaseHoldForm(request.POST or None)
        if request.method == "POST" and form.is_valid():
            requester = Requester(name=request.user.get_username(), kind=HoldRequesterKind.USER)
            try:
                release_hold(hold.id, reason=form.cleaned_data["reason"], requester=requester)
            except MailFathomError as error:
                messages.error(request, str(error))
            else:
                messages.success(request, gettext("Legal hold '%(name)s' released.") % {"name": hold.name})
                return HttpResponseRedirect(reverse("admin:audit_legalhold_change", args=[hold.id]))
        context = {
            **self.admin_site.each_context(request),
            "opts": self.opts,
            "title": gettext("Release legal hold"),
            "hold": hold,
            "form": form,
        }
        return TemplateResponse(request, "audit/hold_release.html", context)

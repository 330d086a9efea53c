"""Operator console for compliance API tokens: create one (secret shown once), see use, revoke.

Creating goes through audit.api_tokens.create_token, so the admin refuses a permission the
operator does not hold, exactly as the API does. The secret is rendered once in the
response to the add form and kept nowhere else (not in a message, which would sit in the
session store until read).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from django import forms
from django.contrib import admin, messages
from django.contrib.auth.models import Permission
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.template.loader import render_to_string
from django.utils.translation import gettext, ngettext
from django.utils.translation import gettext_lazy as _

from audit.api_tokens import ApiToken, api_permissions, create_token, refusal, revoke

if TYPE_CHECKING:  # the admin's own return types, declared by django-stubs only
    from django.contrib.admin.options import _FieldGroups


CREATED_PAGE_TEMPLATE = "audit/api_token_created.html"


class ApiTokenAddForm(forms.ModelForm):
    """Name and permissions of a new token; refuses what create_token would refuse."""

    creator: Any = None  # set per request by ApiTokenAdmin.get_form
    permissions = forms.ModelMultipleChoiceField(
        queryset=Permission.objects.none(), widget=forms.CheckboxSelectMultiple, required=True
    )

    class Meta:
        model = ApiToken
        fields = ["name", "permissions"]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["permissions"].queryset = api_permissions()  # type: ignore[attr-defined]  # a ModelMultipleChoiceField; form.fields holds plain Field

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        chosen = [permission.codename for permission in data.get("permissions") or []]
        if "name" in data and chosen:
            reason = refusal(self.creator, data["name"], chosen)
            if reason is not None:
                self.add_error("permissions" if "permission" in reason else "name", reason)
        return data


@admin.register(ApiToken)
class ApiTokenAdmin(admin.ModelAdmin):
    list_display = ["name", "prefix", "created_by", "status", "created_at", "last_used_at", "revoked_at"]
    list_filter = [("revoked_at", admin.EmptyFieldListFilter)]
    search_fields = ["name", "prefix"]
    readonly_fields = ["name", "prefix", "created_by", "granted", "created_at", "last_used_at", "revoked_at"]
    actions = ["revoke_tokens"]

    @admin.display(description=_("Status"))
    def status(self, obj: ApiToken) -> str:
        return gettext("revoked") if obj.is_revoked else gettext("active")

    @admin.display(description=_("Permissions"))
    def granted(self, obj: ApiToken) -> str:
        return ", ".join(sorted(permission.codename for permission in obj.permissions.all())) or gettext(
            "none"
        )

    def get_queryset(self, request: HttpRequest) -> QuerySet[ApiToken]:
        return super().get_queryset(request).select_related("created_by")

    def get_form(
        self, request: HttpRequest, obj: ApiToken | None = None, change: bool = False, **kwargs: Any
    ) -> Any:
        if obj is None:
            kwargs["form"] = type("ApiTokenAddForm", (ApiTokenAddForm,), {"creator": request.user})
        return super().get_form(request, obj, change=change, **kwargs)

    def get_fields(self, request: HttpRequest, obj: ApiToken | None = None) -> _FieldGroups:
        return ["name", "permissions"] if obj is None else list(self.readonly_fields)

    def get_readonly_fields(self, request: HttpRequest, obj: ApiToken | None = None) -> list[str]:
        return [] if obj is None else list(self.readonly_fields)

    def has_delete_permission(self, request: HttpRequest, obj: ApiToken | None = None) -> bool:
        return False  # revoked, never deleted: the trail of who held what stays readable

    def add_view(self, request: HttpRequest, form_url: str = "", extra_context: Any = None) -> HttpResponse:
        # A valid form is created here, never by ModelAdmin's save (which would store no hash);
        # an invalid one falls through to the ordinary form page with its errors.
        if request.method == "POST" and self.has_add_permission(request):
            form = self.get_form(request)(request.POST)
            if form.is_valid():
                wanted = [permission.codename for permission in form.cleaned_data["permissions"]]
                user = request.user
                assert user.is_authenticated  # the admin serves staff only
                issued = create_token(user, form.cleaned_data["name"], wanted)
                return self._shown_once(request, issued.record, issued.secret)
        return super().add_view(request, form_url, extra_context)

    def _shown_once(self, request: HttpRequest, record: ApiToken, secret: str) -> HttpResponse:
        context = {
            **self.admin_site.each_context(request),
            "title": gettext("API token created"),
            "name": record.name,
            "secret": secret,
            "prefix": record.prefix,
            "changelist_url": "../",
        }
        response = HttpResponse(render_to_string(CREATED_PAGE_TEMPLATE, context, request))
        response["Cache-Control"] = "no-store"
        return response

    @admin.action(description=_("Revoke selected tokens"))
    def revoke_tokens(self, request: HttpRequest, queryset: QuerySet[ApiToken]) -> None:
        revoked = sum(revoke(token.pk) for token in queryset)
        self.message_user(
            request,
            ngettext("%(count)d token revoked.", "%(count)d tokens revoked.", revoked) % {"count": revoked},
            messages.SUCCESS,
        )

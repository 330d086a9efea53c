"""Notification preferences in admin: each person edits their own; operators see everyone's.

Any staff user may open the page, without a model permission: what they may change is their
own row only. Operators (accounts.see_every_account, superusers) see, add and change every
person's row and may ask to be told about every account. A webhook's secret is made here and
shown once, in the message after saving; ticking "new webhook secret" replaces it.
"""

from __future__ import annotations

import secrets
from typing import TYPE_CHECKING, Any

from django import forms
from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest

from accounts.notification_models import NotificationPreference
from accounts.services.people import sees_every_account

if TYPE_CHECKING:  # the admin's own return types, declared by django-stubs only
    from django.contrib.admin.options import _FieldGroups

SECRET_PREFIX = "mfwh_"  # noqa: S105 (a prefix that tells the secret apart, not a secret)


class PreferenceForm(forms.ModelForm):
    new_secret = forms.BooleanField(
        label="new webhook secret",
        required=False,
        help_text="Replace the webhook's secret; the new one is shown once, after saving.",
    )

    class Meta:
        model = NotificationPreference
        fields = [
            "user",
            "by_mail",
            "webhook_url",
            "drafts_waiting",
            "sync_failing",
            "sign_in_needed",
            "every_account",
        ]


@admin.register(NotificationPreference)
class NotificationPreferenceAdmin(admin.ModelAdmin):
    form = PreferenceForm
    list_display = ["__str__", "by_mail", "webhook", "drafts_waiting", "sync_failing", "sign_in_needed"]
    raw_id_fields = ["user"]

    @admin.display(description="webhook", boolean=True)
    def webhook(self, preference: NotificationPreference) -> bool:
        return bool(preference.webhook_url)

    def get_queryset(self, request: HttpRequest) -> QuerySet[NotificationPreference]:
        rows = super().get_queryset(request).select_related("user")
        return rows if sees_every_account(request.user) else rows.filter(user=request.user.pk)

    def get_fields(self, request: HttpRequest, obj: Any = None) -> _FieldGroups:
        fields: list[str] = [
            "by_mail",
            "webhook_url",
            "new_secret",
            "drafts_waiting",
            "sync_failing",
            "sign_in_needed",
        ]
        if sees_every_account(request.user):
            return ("user", *fields, "every_account")
        return tuple(fields)

    # --- a person's own row, without a model permission ------------------------------------

    def _staff(self, request: HttpRequest) -> bool:
        return bool(request.user.is_active and request.user.is_staff)

    def _own(self, request: HttpRequest, obj: Any) -> bool:
        return sees_every_account(request.user) or obj is None or obj.user_id == request.user.pk

    def has_module_permission(self, request: HttpRequest) -> bool:
        return self._staff(request)

    def has_view_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return self._staff(request) and self._own(request, obj)

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return self._staff(request) and self._own(request, obj)

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return self._staff(request) and self._own(request, obj)

    def has_add_permission(self, request: HttpRequest) -> bool:
        if not self._staff(request):
            return False
        if sees_every_account(request.user):
            return True
        return not NotificationPreference.objects.filter(user=request.user.pk).exists()

    def save_model(self, request: HttpRequest, obj: Any, form: Any, change: bool) -> None:
        if not sees_every_account(request.user):
            obj.user = request.user
            obj.every_account = False
        made = ""
        if obj.webhook_url and (form.cleaned_data.get("new_secret") or not obj.has_webhook_secret):
            made = SECRET_PREFIX + secrets.token_urlsafe(32)
            obj.set_webhook_secret(made)
        elif not obj.webhook_url:
            obj.set_webhook_secret("")
        super().save_model(request, obj, form, change)
        if made:
            messages.warning(
                request,
                f"The webhook's secret, shown this once: {made} . Keep it where your receiver "
                "checks the X-MailFathom-Signature header (docs/operations/notifications.md).",
            )

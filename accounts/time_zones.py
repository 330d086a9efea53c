"""Each person's time zone: the middleware that shows them times in it, and the page to choose it.

A person without a choice (no UserPreference row, or an empty zone) sees the deployment's
TIME_ZONE. The zone is read once per request, after authentication, and applies to every
time the admin and our templates render (Django converts aware datetimes to the active
zone; mailfathom.core.instants does too).
"""

from __future__ import annotations

import zoneinfo
from collections.abc import Callable

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from accounts.models import UserPreference


def chosen_zone(request: HttpRequest) -> str:
    """The zone the signed-in person chose, or "" for the deployment's own."""
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated:
        return ""
    return UserPreference.objects.filter(user_id=user.pk).values_list("time_zone", flat=True).first() or ""


class TimeZoneMiddleware:
    """Activates the person's zone for the request; after AuthenticationMiddleware."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        name = chosen_zone(request)
        try:
            if name:
                timezone.activate(zoneinfo.ZoneInfo(name))
            else:
                timezone.deactivate()
        except zoneinfo.ZoneInfoNotFoundError:  # a zone this Python no longer knows
            timezone.deactivate()
        try:
            return self.get_response(request)
        finally:
            timezone.deactivate()


class TimeZoneForm(forms.ModelForm):  # type: ignore[type-arg]  # the generic parameter is the model
    class Meta:
        model = UserPreference
        fields = ["time_zone"]
        labels = {"time_zone": _("Your time zone")}


def time_zone_page(request: HttpRequest) -> HttpResponse:
    """Any staff person's own time zone (wrapped in admin.site.admin_view by the URLconf)."""
    if request.user.pk is None:  # admin_view lets only signed-in staff through
        raise PermissionDenied
    preference, _created = UserPreference.objects.get_or_create(user_id=request.user.pk)
    form = TimeZoneForm(request.POST or None, instance=preference)
    if request.method == "POST" and form.is_valid():
        form.save()
        messages.success(request, _("Your time zone is saved."))
        return HttpResponseRedirect(reverse("time-zone"))
    context = {
        **admin.site.each_context(request),
        "title": _("Time zone"),
        "form": form,
        "zones": sorted(zoneinfo.available_timezones()),
        "default_zone": timezone.get_default_timezone_name(),
        "current_zone": timezone.get_current_timezone_name(),
    }
    return TemplateResponse(request, "admin/time_zone.html", context)

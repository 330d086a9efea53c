"""The System status page and the fragment its script fetches every few seconds.

Both are thin: they call mailfathom.status.services.system_status() and render it. They
are wrapped in the admin site's admin_view (staff login) and need view permission on mail
accounts (mailfathom.urls). A person sees the rows of the accounts they hold any role on
(accounts.services.people); operators and superusers every account's.
"""

from __future__ import annotations

from django.contrib import admin
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils.translation import gettext_lazy as _
from django.views.decorators.cache import never_cache

from accounts.services import people
from mailfathom.status import charts
from mailfathom.status.services import SystemStatus, system_status

REFRESH_SECONDS = 5


def _context(status: SystemStatus) -> dict[str, object]:
    return {
        "status": status,
        "stored_chart": charts.mail_per_day_chart(status.mail_per_day, status.stored_today),
        "coverage_chart": charts.coverage_chart(status.embedding.history),
    }


def _require_permission(request: HttpRequest) -> None:
    if not request.user.has_perm("accounts.view_mailaccount"):
        raise PermissionDenied


@never_cache
def status_page(request: HttpRequest) -> HttpResponse:
    _require_permission(request)
    context = {
        **admin.site.each_context(request),
        "title": _("System status"),
        "refresh_url": reverse("system-status-live"),
        "refresh_seconds": REFRESH_SECONDS,
        **_context(system_status(people.reviewable_accounts(request.user))),
    }
    return TemplateResponse(request, "admin/status/page.html", context)


@never_cache
def status_live(request: HttpRequest) -> HttpResponse:
    _require_permission(request)
    return TemplateResponse(
        request, "admin/status/live.html", _context(system_status(people.reviewable_accounts(request.user)))
    )

"""The project's routes: admin, System status, health, attachment links, the REST API and its schema.

/mcp is not here: mailfathom.asgi mounts it beside Django.
"""

from django.contrib import admin
from django.contrib.admin.views.decorators import staff_member_required
from django.urls import include, path
from django.utils.translation import gettext_lazy as _
from django.views.generic import RedirectView
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView

from accounts import admin_sign_in, time_zones
from mailfathom import views
from mailfathom.login_throttle import ThrottledAdminLoginForm
from mailfathom.status import views as status_views

admin.site.site_header = _("MailFathom administration")
admin.site.site_title = "MailFathom"
# Failed logins are counted per user name and per address (docs/operations/deployment.md).
admin.site.login_form = ThrottledAdminLoginForm
# The index leads with a link to System status (docs/operations/status.md).
admin.site.index_template = "admin/mailfathom_index.html"
# A database or Redis outage is a 503 page with Retry-After, not a 500 and a traceback.
handler500 = "mailfathom.outage.server_error"

urlpatterns = [
    # There is no public site: "/" and admin's "View site" lead to admin.
    path("", RedirectView.as_view(pattern_name="admin:index", permanent=False), name="home"),
    path("favicon.ico", views.favicon, name="favicon"),
    # Before admin.site.urls, whose catch-all would answer these paths first.
    path("admin/status/", admin.site.admin_view(status_views.status_page), name="system-status"),
    path("admin/status/live/", admin.site.admin_view(status_views.status_live), name="system-status-live"),
    path("admin/time-zone/", admin.site.admin_view(time_zones.time_zone_page), name="time-zone"),
    path("admin/", admin.site.urls),
    # The redirect URI registered at OAuth providers (docs/operations/mailbox-providers.md).
    path(
        admin_sign_in.SIGN_IN_CALLBACK_PATH,
        admin.site.admin_view(admin_sign_in.callback),
        name="mailbox-sign-in-callback",
    ),
    path("health", views.health, name="health"),
    path("people/", include("mailfathom.people.urls")),  # search and ask for people (mailfathom.people)
    # /mcp's authorization server (docs/operations/connecting-assistants.md).
    path("", include("mailfathom.oauth.urls")),
    path("attachments/", include("mailbox.urls")),
    path("compliance/", include("audit.urls")),
    path("api/", staff_member_required(views.api_root), name="api-root"),
    # The compliance API (docs/operations/compliance-api.md): tokens, trails, export, erasure.
    path("api/", include("audit.api.urls")),
    path("api/schema/", SpectacularAPIView.as_view(), name="api-schema"),
    # Both are staff-only (SPECTACULAR_SETTINGS["SERVE_PERMISSIONS"]); the page, read in a
    # browser, sends an anonymous visitor to the login form rather than a bare 403.
    path(
        "api/docs/",
        staff_member_required(SpectacularSwaggerView.as_view(url_name="api-schema")),
        name="api-docs",
    ),
]

"""The project's routes: admin, health, attachment links, the REST API and its staff-only schema.

/mcp is not here: mailfathom.asgi mounts it beside Django.
"""

from django.contrib import admin
from django.contrib.admin.views.decorators import staff_member_required
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView

from mailfathom import views
from mailfathom.login_throttle import ThrottledAdminLoginForm

admin.site.site_header = "MailFathom administration"
admin.site.site_title = "MailFathom"
# Failed logins are counted per user name and per address (docs/operations/deployment.md).
admin.site.login_form = ThrottledAdminLoginForm

urlpatterns = [
    path("admin/", admin.site.urls),
    path("health", views.health, name="health"),
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

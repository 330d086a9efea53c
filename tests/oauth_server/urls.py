"""The toolkit's endpoints under /o/ (the issuer is http://host:port/o), and the login page.

RFC 8414 metadata is mounted a second time at the root, where a strict client looks for it:
/.well-known/oauth-authorization-server/o.
"""

from django.contrib.auth import views as auth_views
from django.urls import include, path
from oauth2_provider import urls as oauth2_urls

urlpatterns = [
    path("accounts/login/", auth_views.LoginView.as_view(), name="login"),
    path("o/", include("oauth2_provider.urls", namespace="oauth2_provider")),
    path("", include((oauth2_urls.metadata_urlpatterns, "oauth2_metadata"))),
]

"""Routes of /mcp's authorization server (mounted at the root by mailfathom.urls)."""

from django.urls import path

from mailfathom.oauth import views

urlpatterns = [
    path(".well-known/oauth-protected-resource", views.resource_metadata, name="oauth-resource-metadata"),
    path(".well-known/oauth-protected-resource/mcp", views.resource_metadata),
    path(".well-known/oauth-authorization-server", views.server_metadata, name="oauth-server-metadata"),
    path("oauth/authorize", views.authorize, name="oauth-authorize"),
    path("oauth/token", views.token, name="oauth-token"),
    path("oauth/register", views.register, name="oauth-register"),
    path("oauth/revoke", views.revoke, name="oauth-revoke"),
    path("oauth/login/", views.SignIn.as_view(), name="oauth-login"),
    path("oauth/connections/", views.connections, name="oauth-connections"),
]

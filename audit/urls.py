"""Compliance pages served outside admin (mounted at /compliance/ by mailfathom.urls)."""

from django.urls import path

from audit import views

app_name = "audit"

urlpatterns = [
    path(
        "erasures/<uuid:request_id>/statement/",
        views.erasure_statement_page,
        name="erasure-statement",
    ),
]

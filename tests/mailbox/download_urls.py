"""A URLconf routing only the attachment download, as mailfathom.urls does, for the tests."""

from django.urls import include, path

urlpatterns = [path("attachments/", include("mailbox.urls"))]

"""Routes of the mailbox app, included by mailfathom.urls under "attachments/"."""

from django.urls import path

from mailbox import views

app_name = "mailbox"

urlpatterns = [
    path("<str:token>", views.download_attachment, name="attachment-download"),
]

"""Routes of the mailbox app, included by mailfathom.urls under "attachments/".

Every path under attachments/ is answered by a view here, the ones that are not a link
included: Django's own 404 would write the path, a bearer token, to the log.
"""

from django.urls import path, re_path

from mailbox import views

app_name = "mailbox"

urlpatterns = [
    path("<str:token>", views.download_attachment, name="attachment-download"),
    re_path(r"^.*\Z", views.not_a_link, name="attachment-not-a-link"),
]

from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class MailboxConfig(AppConfig):
    """The local copy of the mail: sync, import, parsing, the search index and the read use cases."""

    name = "mailbox"
    verbose_name = _("Local mailbox copy")

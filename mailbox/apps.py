from django.apps import AppConfig


class MailboxConfig(AppConfig):
    """The local copy of the mail: sync, import, parsing, the search index and the read use cases."""

    name = "mailbox"
    verbose_name = "Local mailbox copy"

from django.apps import AppConfig


class MailboxConfig(AppConfig):
    """The local mailbox copy; filled by the mailbox and search issues."""

    name = "mailbox"
    verbose_name = "Local mailbox copy"

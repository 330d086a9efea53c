from django.apps import AppConfig


class AuditConfig(AppConfig):
    """The audit trails (what a question read, what MailFathom changed) and their retention."""

    name = "audit"
    verbose_name = "Audit"

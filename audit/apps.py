from django.apps import AppConfig


class AuditConfig(AppConfig):
    """The audit trails, their retention, erasure requests and the compliance API."""

    name = "audit"
    verbose_name = "Audit"

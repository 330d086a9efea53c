from django.apps import AppConfig


class AuditConfig(AppConfig):
    """The audit trails and the compliance API (holds no models yet)."""

    name = "audit"
    verbose_name = "Audit"

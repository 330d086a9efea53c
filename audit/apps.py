from django.apps import AppConfig


class AuditConfig(AppConfig):
    """Answering audit trail, mutation trail and compliance export; filled by later issues."""

    name = "audit"
    verbose_name = "Audit"

from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class AuditConfig(AppConfig):
    """The audit trails, their retention, erasure requests and the compliance API."""

    name = "audit"
    verbose_name = _("Audit")

    def ready(self) -> None:
        # Chains every trail: saves and deletes through the ORM append links (audit/services/chain.py).
        from audit.services.chained_trails import register_existing_trails

        register_existing_trails()
        from audit.receivers import record_admin_read, record_folder_reset
        from mailbox.signals import folder_mail_deleted, mail_content_shown

        mail_content_shown.connect(record_admin_read, dispatch_uid="audit.record_admin_read")
        folder_mail_deleted.connect(record_folder_reset, dispatch_uid="audit.record_folder_reset")

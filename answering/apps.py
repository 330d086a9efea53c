from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class AnsweringConfig(AppConfig):
    """ask_mail (questions answered from the mail a chat model looks up) and reply drafting."""

    name = "answering"
    verbose_name = _("Answering")

    def ready(self) -> None:
        from accounts.signals import drafting_switched_on
        from answering.drafting import checks  # noqa: F401 (registers the drafting checks)
        from answering.receivers import queue_drafting_after_switch_on, queue_drafting_after_synchronization
        from mailbox.signals import synchronization_finished

        synchronization_finished.connect(
            queue_drafting_after_synchronization,
            dispatch_uid="answering.queue_drafting_after_synchronization",
        )
        drafting_switched_on.connect(
            queue_drafting_after_switch_on, dispatch_uid="answering.queue_drafting_after_switch_on"
        )

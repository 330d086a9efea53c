from django.apps import AppConfig


class MailFathomConfig(AppConfig):
    name = "mailfathom"
    verbose_name = "MailFathom"

    def ready(self) -> None:
        from mailfathom import (
            celery,  # noqa: F401  (the app tasks send through: shared_task binds to it once loaded)
            checks,  # noqa: F401  (registers the system checks)
        )

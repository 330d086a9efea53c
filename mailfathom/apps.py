from django.apps import AppConfig


class MailFathomConfig(AppConfig):
    name = "mailfathom"
    verbose_name = "MailFathom"

    def ready(self) -> None:
        from mailfathom import checks  # noqa: F401  (registers the system checks)

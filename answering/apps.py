from django.apps import AppConfig


class AnsweringConfig(AppConfig):
    """ask_mail and reply drafting; filled by the answering issue."""

    name = "answering"
    verbose_name = "Answering"

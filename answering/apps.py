from django.apps import AppConfig


class AnsweringConfig(AppConfig):
    """ask_mail: questions answered from the mail a chat model looks up."""

    name = "answering"
    verbose_name = "Answering"

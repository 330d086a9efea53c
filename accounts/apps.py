from django.apps import AppConfig


class AccountsConfig(AppConfig):
    name = "accounts"
    # Not "Mail accounts": the model's own name, which the breadcrumb would then repeat.
    verbose_name = "Accounts and access"

from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class AccountsConfig(AppConfig):
    name = "accounts"
    # Not "Mail accounts": the model's own name, which the breadcrumb would then repeat.
    verbose_name = _("Accounts and access")

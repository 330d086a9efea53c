"""System checks that refuse a misconfigured deployment at startup.

`manage.py check`, `make run`, uvicorn (through mailfathom.asgi) and the Celery worker all
run them; an Error stops the process with a message naming the setting and its range.
"""

from __future__ import annotations

from cryptography.fernet import Fernet
from django.conf import settings
from django.core.checks import Error, register


@register()
def check_mailfathom_settings(app_configs: object = None, **kwargs: object) -> list[Error]:
    """Refuse every MAILFATHOM_* value that does not parse or lies outside its range."""
    return [
        Error(message, id="mailfathom.E001", hint="See the configuration table in README.md.")
        for message in settings.MAILFATHOM_CONFIG_PROBLEMS.values()
    ]


@register()
def check_secrets(app_configs: object = None, **kwargs: object) -> list[Error]:
    """Refuse a deployment without a secret key or a usable key ring."""
    errors = []
    if not settings.SECRET_KEY:
        errors.append(
            Error(
                "DJANGO_SECRET_KEY must be set when DATABASE_URL is set.",
                id="mailfathom.E002",
            )
        )
    keys = [key.strip() for key in settings.MAILFATHOM_KEYRING.split(",") if key.strip()]
    if not keys:
        errors.append(
            Error(
                "MAILFATHOM_KEYRING must hold at least one Fernet key when DATABASE_URL is set.",
                id="mailfathom.E003",
                hint="Generate one with: python -c 'from cryptography.fernet import Fernet; "
                "print(Fernet.generate_key().decode())'",
            )
        )
    for position, key in enumerate(keys, start=1):
        try:
            Fernet(key)
        except ValueError:
            errors.append(
                Error(
                    f"MAILFATHOM_KEYRING key {position} is not a Fernet key (32 bytes, url-safe base64).",
                    id="mailfathom.E004",
                )
            )
    return errors


@register()
def check_embedding_provider(app_configs: object = None, **kwargs: object) -> list[Error]:
    """Refuse MAILFATHOM_EMBEDDING_* values that do not fit the chosen provider."""
    from mailfathom.providers import embedding_configuration_problems

    return [Error(message, id="mailfathom.E005") for message in embedding_configuration_problems()]

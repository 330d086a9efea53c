"""System checks that refuse a misconfigured deployment at startup.

`manage.py check`, `make run`, uvicorn (through mailfathom.asgi) and the Celery worker all
run them; an Error stops the process with a message naming the setting and its range.
"""

from __future__ import annotations

from cryptography.fernet import Fernet
from django.conf import settings
from django.core.checks import CheckMessage, Error, Tags, register
from django.core.checks import Warning as CheckWarning

from mailfathom.core import config
from mailfathom.core.config import MailFathomSettings
from mailfathom.core.hosts import is_loopback_host
from mailfathom.core.signing import ring


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
    keys = ring()
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
def check_attachment_text_kinds(app_configs: object = None, **kwargs: object) -> list[Error]:
    """Refuse a MAILFATHOM_ATTACHMENT_TEXT_KINDS entry that names no kind extraction reads."""
    from mailbox.services.attachment_text import unknown_kinds

    unknown = unknown_kinds()
    if not unknown:
        return []
    return [
        Error(
            f"MAILFATHOM_ATTACHMENT_TEXT_KINDS names {len(unknown)} kind(s) that extraction does not read.",
            id="mailfathom.E050",
            hint="See the configuration table in README.md for the kinds.",
        )
    ]


@register()
def check_embedding_provider(app_configs: object = None, **kwargs: object) -> list[Error]:
    """Refuse MAILFATHOM_EMBEDDING_* values that do not fit the chosen provider."""
    from mailfathom.providers import embedding_configuration_problems

    return [Error(message, id="mailfathom.E005") for message in embedding_configuration_problems()]


@register()
def check_chat_provider(app_configs: object = None, **kwargs: object) -> list[Error]:
    """Refuse MAILFATHOM_CHAT_* values that do not fit the chosen provider or the answering bounds."""
    from mailfathom.providers import chat_configuration_problems

    errors = [Error(message, id="mailfathom.E006") for message in chat_configuration_problems()]
    values: MailFathomSettings = settings.MAILFATHOM
    candidates = values.chat_relevance_filter_max_candidates
    passages = values.answering_max_passages_per_retrieval
    if candidates > passages:
        errors.append(
            Error(
                f"MAILFATHOM_CHAT_RELEVANCE_FILTER_MAX_CANDIDATES ({candidates}) must be at most "
                f"MAILFATHOM_ANSWERING_MAX_PASSAGES_PER_RETRIEVAL ({passages}).",
                id="mailfathom.E007",
            )
        )
    return errors


@register()
def check_mcp_posture(app_configs: object = None, **kwargs: object) -> list[CheckMessage]:
    """Refuse an enabled /mcp without a stated posture, or open to the network without a key."""
    values: MailFathomSettings = settings.MAILFATHOM
    if not values.mcp_enabled:
        return []
    posture = values.mcp_auth
    if posture not in ("api-key", "oauth", "oauth+api-key", "none"):
        return [
            Error(
                "MAILFATHOM_MCP_ENABLED is true but MAILFATHOM_MCP_AUTH is not set: state whether "
                "MCP clients present an API key (api-key), sign a person in (oauth, or "
                "oauth+api-key for both) or present nothing (none).",
                id="mailfathom.E020",
                hint="See docs/operations/mcp-endpoint.md.",
            )
        ]
    messages: list[CheckMessage] = []
    bound_to_loopback = is_loopback_host(values.http_host)
    if posture == "none" and not bound_to_loopback and not values.mcp_allow_unauthenticated_nonloopback:
        messages.append(
            Error(
                "MAILFATHOM_MCP_AUTH=none is allowed only while MAILFATHOM_HTTP_HOST is a loopback "
                "address; use api-key, or set MAILFATHOM_MCP_ALLOW_UNAUTHENTICATED_NONLOOPBACK=true.",
                id="mailfathom.E021",
                hint="See docs/operations/mcp-endpoint.md.",
            )
        )
    if posture.startswith("oauth") and not values.public_base_url.strip() and not bound_to_loopback:
        messages.append(
            CheckWarning(
                "MAILFATHOM_MCP_AUTH names oauth but MAILFATHOM_PUBLIC_BASE_URL is not set, so the "
                "issuer and the /mcp resource URL are taken from each request's Host header; set "
                "it to the https address clients reach this server at.",
                id="mailfathom.W021",
                hint="See docs/operations/connecting-assistants.md.",
            )
        )
    default_hosts = config.BY_NAME["MAILFATHOM_MCP_ALLOWED_HOSTS"].default
    if not bound_to_loopback and values.mcp_allowed_hosts == default_hosts:
        messages.append(
            CheckWarning(
                "MAILFATHOM_HTTP_HOST is not a loopback address but MAILFATHOM_MCP_ALLOWED_HOSTS "
                "still lists only loopback names, so clients reaching this server by another "
                "name are refused with 421.",
                id="mailfathom.W020",
            )
        )
    return messages


@register()
def check_settings_are_declared(app_configs: object = None, **kwargs: object) -> list[Error]:
    """Refuse to start while our code reads a MAILFATHOM setting that is not declared."""
    from mailfathom.config_usage import undeclared_reads

    return [
        Error(
            f"{read.path}:{read.line} reads settings.MAILFATHOM.{read.name}, which mailfathom.core.config "
            "does not declare.",
            id="mailfathom.E010",
        )
        for read in undeclared_reads(settings.BASE_DIR)
    ]


@register()
def check_https_posture(app_configs: object = None, **kwargs: object) -> list[CheckMessage]:
    """Warn about HTTPS settings that contradict each other (docs/operations/deployment.md)."""
    values: MailFathomSettings = settings.MAILFATHOM
    messages: list[CheckMessage] = []
    if values.https and values.public_base_url.lower().startswith("http://"):
        messages.append(
            CheckWarning(
                "MAILFATHOM_HTTPS is true but MAILFATHOM_PUBLIC_BASE_URL starts with http://, so "
                "attachment download links would send their token over plain HTTP.",
                id="mailfathom.W030",
                hint="See docs/operations/deployment.md.",
            )
        )
    if values.hsts_preload and not values.hsts_include_subdomains:
        messages.append(
            CheckWarning(
                "MAILFATHOM_HSTS_PRELOAD is true but MAILFATHOM_HSTS_INCLUDE_SUBDOMAINS is false; "
                "the browsers' preload list accepts only hosts whose HSTS covers subdomains.",
                id="mailfathom.W031",
                hint="See docs/operations/deployment.md.",
            )
        )
    return messages


@register()
def check_notification_mail(app_configs: object = None, **kwargs: object) -> list[Error]:
    """Refuse an SMTP server without a From address, or reached in the clear off loopback."""
    values: MailFathomSettings = settings.MAILFATHOM
    if not values.email_host:
        return []
    errors = []
    if not values.email_from.strip():
        errors.append(
            Error(
                "MAILFATHOM_EMAIL_FROM must be set when MAILFATHOM_EMAIL_HOST is set.",
                id="mailfathom.E040",
                hint="See docs/operations/notifications.md.",
            )
        )
    if values.email_security == "none" and not is_loopback_host(values.email_host):
        errors.append(
            Error(
                "MAILFATHOM_EMAIL_SECURITY may be none only when MAILFATHOM_EMAIL_HOST is a loopback host.",
                id="mailfathom.E041",
                hint="See docs/operations/notifications.md.",
            )
        )
    return errors


@register(Tags.database)
def check_oauth_registrations(
    app_configs: object = None, databases: object = None, **kwargs: object
) -> list[CheckMessage]:
    """Warn of OAuth registrations that cannot work (run with `manage.py check --database default`)."""
    from django.core.exceptions import SynchronousOnlyOperation
    from django.db import DatabaseError

    from accounts.services.oauth_registrations import problems

    if not databases:  # as Django's own database checks: only when a database is named
        return []
    try:
        found = problems()
    except (DatabaseError, RuntimeError, SynchronousOnlyOperation):
        # `migrate` runs database checks before its tables exist; a test may forbid queries.
        return []
    return [CheckWarning(problem, id="mailfathom.W010") for problem in found]

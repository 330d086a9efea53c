"""Settings of the tests' authorization server (DJANGO_SETTINGS_MODULE=tests.oauth_server.settings).

Read from two variables the fixture sets: MF_OAUTH_SERVER_DB (the SQLite file) and
MF_OAUTH_SERVER_KEY_FILE (the RSA key signing ID tokens; absent while migrating).
"""

import os
from pathlib import Path

HERE = Path(__file__).resolve().parent

SECRET_KEY = "tests-oauth-server-not-a-secret"
DEBUG = False
ALLOWED_HOSTS = ["127.0.0.1", "localhost"]
ROOT_URLCONF = "tests.oauth_server.urls"
INSTALLED_APPS = [
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "oauth2_provider",
]
MIDDLEWARE = [
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
]
TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [HERE / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ]
        },
    }
]
DATABASES = {
    "default": {
        "ENGINE": "django.db.backends.sqlite3",
        "NAME": os.environ.get("MF_OAUTH_SERVER_DB", ":memory:"),
        # The test process writes this file too (redirect URIs, expiries): wait, never fail.
        "OPTIONS": {"timeout": 20, "transaction_mode": "IMMEDIATE"},
    }
}
# Client secrets are hashed with the first hasher and checked on every introspection, so a
# slow hasher would slow every IMAP login; MD5 is fit for a test server only.
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
LOGIN_URL = "/accounts/login/"
USE_TZ = True
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

_key_file = os.environ.get("MF_OAUTH_SERVER_KEY_FILE")
OAUTH2_PROVIDER = {
    "OIDC_ENABLED": True,
    "OIDC_RSA_PRIVATE_KEY": Path(_key_file).read_text() if _key_file else "",
    "PKCE_REQUIRED": True,
    "ROTATE_REFRESH_TOKEN": True,
    "REFRESH_TOKEN_REUSE_PROTECTION": True,
    "ACCESS_TOKEN_EXPIRE_SECONDS": 3600,
    "SCOPES": {
        "openid": "OpenID Connect",
        "email": "Your e-mail address",
        "imap": "Read your mail over IMAP",
        "offline_access": "Stay signed in",
        "introspection": "Introspect tokens",
    },
    "DEFAULT_SCOPES": ["imap"],
    "OAUTH2_VALIDATOR_CLASS": "tests.oauth_server.validators.Validator",
}
# The toolkit at INFO: at DEBUG it logs authorization codes. Request lines (django.server)
# carry paths and query strings, never a token: tokens travel in POST bodies only.
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": "WARNING"},
    "loggers": {
        "oauth2_provider": {"level": "INFO"},
        "django.server": {"handlers": ["console"], "level": "INFO", "propagate": False},
    },
}

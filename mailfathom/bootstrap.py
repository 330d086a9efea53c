"""First-run chores `make run` performs: the admin user an operator logs in with."""

from __future__ import annotations

import secrets
from dataclasses import dataclass

from django.contrib.auth import get_user_model
from django.contrib.auth.password_validation import validate_password
from django.core.exceptions import ValidationError
from django.core.management.base import CommandError

ADMIN_USERNAME = "admin"


class WeakAdminPassword(CommandError):
    """MAILFATHOM_ADMIN_PASSWORD fails AUTH_PASSWORD_VALIDATORS; the message names the rules broken.

    A CommandError so that both callers, `ensure_admin` and `serve` (`make run`), stop with
    the message alone rather than a traceback.
    """


@dataclass(frozen=True)
class AdminUser:
    username: str
    created: bool
    password: str | None  # only when generated now: shown once, never stored in clear


def ensure_admin_user(password: str = "") -> AdminUser:
    """Create the `admin` superuser if no such user exists; never touch an existing one.

    With no password given one is generated and returned so the caller can print it once.
    A given password must pass Django's password validation (AUTH_PASSWORD_VALIDATORS), or
    WeakAdminPassword is raised and nothing is created. It is checked only when it is used:
    an existing admin is left alone whatever the setting says.
    """
    user_model = get_user_model()
    if user_model.objects.filter(username=ADMIN_USERNAME).exists():
        return AdminUser(ADMIN_USERNAME, created=False, password=None)
    chosen = password or secrets.token_urlsafe(18)
    candidate = user_model(username=ADMIN_USERNAME, email="")
    try:
        validate_password(chosen, user=candidate)
    except ValidationError as error:
        # Validator messages describe the rule ("too short", "too common"), never the value.
        rules = " ".join(error.messages)
        raise WeakAdminPassword(
            f"MAILFATHOM_ADMIN_PASSWORD does not meet the password rules: {rules} Choose a stronger "
            "one, or unset it to have a password generated."
        ) from None
    user_model.objects.create_superuser(username=ADMIN_USERNAME, email="", password=chosen)
    return AdminUser(ADMIN_USERNAME, created=True, password=None if password else chosen)

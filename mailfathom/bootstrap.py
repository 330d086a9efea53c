"""First-run chores `make run` performs: the admin user an operator logs in with."""

from __future__ import annotations

import secrets
from dataclasses import dataclass

from django.contrib.auth import get_user_model

ADMIN_USERNAME = "admin"


@dataclass(frozen=True)
class AdminUser:
    username: str
    created: bool
    password: str | None  # only when generated now: shown once, never stored in clear


def ensure_admin_user(password: str = "") -> AdminUser:
    """Create the `admin` superuser if no such user exists; never touch an existing one.

    With no password given one is generated and returned so the caller can print it once.
    """
    user_model = get_user_model()
    if user_model.objects.filter(username=ADMIN_USERNAME).exists():
        return AdminUser(ADMIN_USERNAME, created=False, password=None)
    chosen = password or secrets.token_urlsafe(12)
    user_model.objects.create_superuser(username=ADMIN_USERNAME, email="", password=chosen)
    return AdminUser(ADMIN_USERNAME, created=True, password=None if password else chosen)

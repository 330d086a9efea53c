"""Celery tasks of the accounts app: keeping OAuth sign-ins fresh between runs."""

from __future__ import annotations

from celery import shared_task

from accounts.services.oauth_tokens import renew_expiring


@shared_task(name="accounts.renew_oauth_tokens", ignore_result=True)
def renew_oauth_tokens() -> int:
    """Renew access tokens about to expire (beat, every five minutes)."""
    return renew_expiring()

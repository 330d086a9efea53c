"""API keys for /mcp: create one (shown once), authenticate a Bearer token, revoke one.

A key is 256 random bits behind a fixed `mfk_` marker. Only its SHA-256 is stored: a key
with that much entropy needs no slow hash, and a lookup by digest reveals nothing about
the key through timing. The first characters are kept as a prefix so an operator can tell
keys apart. last_used_at is recorded at most once a minute per key, so authenticating a
busy client does not write on every request.
"""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass
from datetime import timedelta

from django.db.models import Q
from django.utils import timezone

from accounts.models import McpApiKey

KEY_MARKER = "mfk_"
PREFIX_LENGTH = 12
MAX_TOKEN_LENGTH = 200
MAX_NAME_LENGTH = 100
LAST_USED_RESOLUTION = timedelta(minutes=1)


@dataclass(frozen=True)
class IssuedKey:
    """A key just created: the stored record and the one time the key itself is known."""

    record: McpApiKey
    key: str


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def create_key(name: str) -> IssuedKey:
    """Create a key named `name` and return it; the key is not stored and cannot be shown again."""
    name = name.strip()
    if not name or len(name) > MAX_NAME_LENGTH:
        raise ValueError(f"A key name must be 1 to {MAX_NAME_LENGTH} characters.")
    key = KEY_MARKER + secrets.token_urlsafe(32)
    record = McpApiKey.objects.create(name=name, prefix=key[:PREFIX_LENGTH], key_hash=_digest(key))
    return IssuedKey(record=record, key=key)


def authenticate(token: object) -> McpApiKey | None:
    """Return the active key `token` is, or None; record when it was last used.

    Anything that is not a plausible key (not text, empty, too long) is refused before it
    is hashed. A revoked key is refused like an unknown one.
    """
    if not isinstance(token, str) or not token or len(token) > MAX_TOKEN_LENGTH:
        return None
    key = McpApiKey.objects.active().filter(key_hash=_digest(token)).first()
    if key is None:
        return None
    now = timezone.now()
    if key.last_used_at is None or now - key.last_used_at >= LAST_USED_RESOLUTION:
        McpApiKey.objects.filter(pk=key.pk).filter(
            Q(last_used_at__isnull=True) | Q(last_used_at__lt=now - LAST_USED_RESOLUTION)
        ).update(last_used_at=now)
        key.last_used_at = now
    return key


def revoke(key_id: int) -> bool:
    """Revoke the key with this id; False when there is no such key or it was already revoked."""
    return bool(McpApiKey.objects.active().filter(pk=key_id).update(revoked_at=timezone.now()))

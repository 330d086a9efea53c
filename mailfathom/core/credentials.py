"""Bearer credentials MailFathom issues (MCP keys, compliance API tokens): made, stored and checked alike.

A credential is 256 random bits in URL-safe base64 behind a fixed marker (`mfk_` for a key,
`mfa_` for a token). Only its SHA-256 is stored, as 64 hex digits: that much entropy needs
no slow hash, and a lookup by digest reveals nothing about the secret through timing. The
first PREFIX_LENGTH characters are kept so an operator can tell credentials apart. When one
was last used is written at most once a LAST_USED_RESOLUTION, so a busy client does not
write on every request.
"""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass
from datetime import timedelta

from django.db.models import Model, Q
from django.utils import timezone

PREFIX_LENGTH = 12
LAST_USED_RESOLUTION = timedelta(minutes=1)
_SECRET_BYTES = 32
_ENCODED_LENGTH = 43  # 32 bytes in URL-safe base64, unpadded


def digest(secret: str) -> str:
    """What is stored of a credential: the SHA-256 of its text, as 64 hex digits."""
    return hashlib.sha256(secret.encode()).hexdigest()


@dataclass(frozen=True)
class Issued:
    """A credential just made: the secret (known this once), its stored prefix and digest."""

    secret: str
    prefix: str
    digest: str


@dataclass(frozen=True)
class Kind:
    """One kind of credential, told apart by its marker."""

    marker: str

    @property
    def length(self) -> int:
        return len(self.marker) + _ENCODED_LENGTH

    def issue(self) -> Issued:
        secret = self.marker + secrets.token_urlsafe(_SECRET_BYTES)
        return Issued(secret=secret, prefix=secret[:PREFIX_LENGTH], digest=digest(secret))

    def well_formed(self, secret: object) -> bool:
        """Whether `secret` has the shape of one this kind issues; anything else is refused unhashed."""
        return isinstance(secret, str) and len(secret) == self.length and secret.startswith(self.marker)


def note_use(record: Model) -> None:
    """Record that `record` (a model with last_used_at) was used now, at most once a resolution.

    Conditional, so concurrent requests write once rather than each.
    """
    now = timezone.now()
    last = record.last_used_at  # type: ignore[attr-defined]  # every credential model has it
    if last is None or now - last >= LAST_USED_RESOLUTION:
        type(record)._default_manager.filter(pk=record.pk).filter(
            Q(last_used_at__isnull=True) | Q(last_used_at__lt=now - LAST_USED_RESOLUTION)
        ).update(last_used_at=now)
        record.last_used_at = now  # type: ignore[attr-defined]  # as above

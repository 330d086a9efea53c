"""Purpose-bound keys derived from MAILFATHOM_KEYRING, for signing cursors and links.

Each purpose gets its own key (HKDF-SHA256 over each ring key), so a cursor can never be
replayed as a download token. The first ring key signs; every key verifies, so rotating
the ring does not void cursors and links already handed out.
"""

from __future__ import annotations

import base64
import hashlib
import hmac

from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from django.conf import settings


def ring() -> list[str]:
    """The keys of MAILFATHOM_KEYRING, newest first: the one parser of the ring.

    The setting is comma-separated keys; spaces around a key and empty entries are ignored.
    Keys are not checked here: mailfathom.checks refuses a ring whose keys are not Fernet
    keys at startup. Read on every call, so a rotated ring takes effect at once.
    """
    return [key.strip() for key in settings.MAILFATHOM_KEYRING.split(",") if key.strip()]


def derived_keys(purpose: str) -> list[bytes]:
    """Return one 32-byte key per ring key for `purpose`, newest first ([] without a ring)."""
    keys = []
    for key in ring():
        hkdf = HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=f"mailfathom:{purpose}".encode())
        keys.append(hkdf.derive(key.encode()))
    return keys


def sign(purpose: str, payload: bytes) -> str:
    """Return payload.signature, both url-safe base64, signed with the newest key."""
    keys = derived_keys(purpose)
    if not keys:
        raise RuntimeError("MAILFATHOM_KEYRING is empty")
    mac = hmac.new(keys[0], payload, hashlib.sha256).digest()
    return f"{_b64(payload)}.{_b64(mac)}"


def verify(purpose: str, token: str) -> bytes | None:
    """Return the payload of a token any ring key signed for `purpose`, else None."""
    try:
        encoded_payload, encoded_mac = token.split(".")
        payload, mac = _unb64(encoded_payload), _unb64(encoded_mac)
    except (ValueError, TypeError):
        return None
    for key in derived_keys(purpose):
        if hmac.compare_digest(hmac.new(key, payload, hashlib.sha256).digest(), mac):
            return payload
    return None


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))

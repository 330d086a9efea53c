"""Purpose-bound keys derived from MAILFATHOM_KEYRING, for signing cursors, links and statements.

Each purpose gets its own key (HKDF-SHA256 over each ring key), so a cursor can never be
replayed as a download token. The first ring key signs; every key verifies, so rotating
the ring does not void cursors and links already handed out.

Documents meant for someone outside the deployment (an erasure statement) are signed with
Ed25519 instead of an HMAC: the private key is derived from the ring the same way, and its
public key can be handed out, so a reader can check a statement without holding the ring.
"""

from __future__ import annotations

import base64
import hashlib
import hmac

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat
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


def signing_keys(purpose: str) -> list[Ed25519PrivateKey]:
    """One Ed25519 key per ring key for `purpose`, newest first ([] without a ring)."""
    return [Ed25519PrivateKey.from_private_bytes(seed) for seed in derived_keys(purpose)]


def public_key_text(key: Ed25519PublicKey) -> str:
    """A public key as url-safe base64 of its 32 raw bytes."""
    return _b64(key.public_bytes(Encoding.Raw, PublicFormat.Raw))


def public_keys(purpose: str) -> list[str]:
    """The public keys of `purpose` (public_key_text), newest first: what a reader verifies with."""
    return [public_key_text(key.public_key()) for key in signing_keys(purpose)]


def sign_document(purpose: str, payload: bytes) -> tuple[str, str]:
    """Sign `payload` with the newest key: (signature, public key), both url-safe base64."""
    keys = signing_keys(purpose)
    if not keys:
        raise RuntimeError("MAILFATHOM_KEYRING is empty")
    return _b64(keys[0].sign(payload)), public_key_text(keys[0].public_key())


def verify_document(payload: bytes, signature: str, public_key: str) -> bool:
    """Whether `signature` is the Ed25519 signature of `payload` under `public_key`."""
    try:
        key = Ed25519PublicKey.from_public_bytes(_unb64(public_key))
        key.verify(_unb64(signature), payload)
    except (InvalidSignature, ValueError, TypeError):
        return False
    return True


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))

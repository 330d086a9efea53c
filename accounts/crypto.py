"""Credentials at rest: encrypted with the MAILFATHOM_KEYRING key ring (MultiFernet).

The first key encrypts; every key decrypts, so an operator rotates by putting a new key
first, running `manage.py rotate_credentials`, then dropping the old key.
"""

from __future__ import annotations

from cryptography.fernet import Fernet, InvalidToken, MultiFernet

from mailfathom.core.errors import Code, MailFathomError
from mailfathom.core.signing import ring

CREDENTIAL_UNREADABLE = Code.CREDENTIAL_UNREADABLE


def keyring() -> MultiFernet:
    return MultiFernet([Fernet(key) for key in ring()])


def encrypt(plain: str) -> str:
    return keyring().encrypt(plain.encode("utf-8")).decode("ascii")


def decrypt(token: str) -> str:
    """Return the plain text of `token`; a token no key opens is error 81001 (internal)."""
    try:
        return keyring().decrypt(token.encode("ascii")).decode("utf-8")
    except InvalidToken as error:
        raise MailFathomError(
            CREDENTIAL_UNREADABLE,
            "A stored credential cannot be decrypted with any key of MAILFATHOM_KEYRING.",
        ) from error


def rotate(token: str) -> str:
    """Re-encrypt `token` under the first key of the ring."""
    return keyring().rotate(token.encode("ascii")).decode("ascii")

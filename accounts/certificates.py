"""Check a CA certificate bundle an operator gives an account, and return it in one PEM form.

Only public certificates are kept: a bundle holding a private key is refused outright (a
key has no place in a trust store, and storing one would spread it), as is text that is
not PEM and a bundle whose every certificate has expired. The certificates are written
back as PEM by `cryptography`, so nothing but them is stored. See docs/operations/accounts.md.
"""

from __future__ import annotations

from datetime import UTC, datetime

from cryptography import x509
from cryptography.hazmat.primitives.serialization import Encoding
from django.core.exceptions import ValidationError

# A generous bound: a bundle of a few hundred certificates, not a file dropped by mistake.
MAX_PEM_CHARS = 1_000_000

NOT_PEM = (
    "This is not a PEM certificate: paste or upload the authority's certificate, the text "
    "from -----BEGIN CERTIFICATE----- to -----END CERTIFICATE-----."
)
PRIVATE_KEY = (
    "This holds a private key, which MailFathom never stores: give only the authority's "
    "certificate (-----BEGIN CERTIFICATE-----)."
)
ALL_EXPIRED = "Every certificate given has expired; get the authority's current certificate."
TOO_LARGE = "This bundle is larger than any certificate authority's; check the file."


def clean_ca_bundle(text: str, *, now: datetime | None = None) -> str:
    """Return `text`'s certificates as PEM, or raise ValidationError saying what is wrong.

    Blank text is returned blank (no CA of the account's own).
    """
    text = (text or "").strip()
    if not text:
        return ""
    if len(text) > MAX_PEM_CHARS:
        raise ValidationError(TOO_LARGE)
    if "PRIVATE KEY-----" in text:
        raise ValidationError(PRIVATE_KEY)
    if "-----BEGIN CERTIFICATE-----" not in text:
        raise ValidationError(NOT_PEM)
    try:
        certificates = x509.load_pem_x509_certificates(text.encode("ascii"))
    except (ValueError, UnicodeEncodeError):
        raise ValidationError(NOT_PEM) from None
    moment = now or datetime.now(UTC)
    if all(certificate.not_valid_after_utc < moment for certificate in certificates):
        raise ValidationError(ALL_EXPIRED)
    return "".join(certificate.public_bytes(Encoding.PEM).decode("ascii") for certificate in certificates)

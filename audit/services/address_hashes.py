"""Addresses kept as keyed hashes: erasure requests, legal holds and case exports store no address.

A record keeps the hashes under the newest key of its own purpose; addresses given again are
matched under every key of the ring, so a record made before a rotation still matches.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Iterable

from mailfathom.core import signing


def address_hash(address: str, key: bytes) -> str:
    """The hex HMAC-SHA256 of a case-folded address under `key` (the caller folds it)."""
    return hmac.new(key, address.encode("utf-8", "surrogatepass"), hashlib.sha256).hexdigest()


def recorded_hashes(addresses: Iterable[str], purpose: str) -> list[str]:
    """The sorted hashes of `addresses` under the newest key of `purpose`: what a record keeps.

    Raises RuntimeError when the key ring is empty (mailfathom.checks refuses such a deployment).
    """
    keys = signing.derived_keys(purpose)
    if not keys:
        raise RuntimeError("MAILFATHOM_KEYRING is empty")
    return sorted(address_hash(address, keys[0]) for address in addresses)


def hashes_match(addresses: Iterable[str], stored: Iterable[str], purpose: str) -> bool:
    """Whether `addresses` hash to exactly the `stored` hashes under one key of `purpose`'s ring.

    No addresses match no stored hashes, whatever the ring holds.
    """
    given, expected = list(addresses), "".join(sorted(stored))
    if not given:
        return not expected
    return any(
        hmac.compare_digest("".join(sorted(address_hash(address, key) for address in given)), expected)
        for key in signing.derived_keys(purpose)
    )

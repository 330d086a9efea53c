"""Suppression of erased mail: what keeps synchronization and import from storing it again.

An erased message leaves one Suppression row per stored copy: its remote identity (folder,
UIDVALIDITY, UID) and a keyed hash of its Message-ID. The hash is an HMAC-SHA256 under the
"erasure-suppression" purpose key (mailfathom.core.signing), so the table holds nothing a reader
could turn back into an identifier without the key ring; every ring key is tried when
checking, so rotating the ring keeps old suppressions working. A suppression written
deployment-wide (the default of an erasure) stops the Message-ID in every account; one
written for the request's accounts only stops it in its own account. See
docs/operations/erasure.md.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Iterable

from django.db.models import Q

from mailbox.models import Folder, Suppression
from mailfathom.core import signing

PURPOSE = "erasure-suppression"


def _normalized(message_id: str) -> bytes:
    # Stored Message-IDs are cut at 998 characters (mailbox.services.store): hash the same text.
    return message_id.strip()[:998].encode("utf-8", "surrogatepass")


def message_id_hash(message_id: str) -> str:
    """Return the hex HMAC of a Message-ID under the newest ring key; "" for none.

    Raises RuntimeError when the key ring is empty (a deployment mailfathom.checks refuses).
    """
    if not message_id.strip():
        return ""
    ring = signing.derived_keys(PURPOSE)
    if not ring:
        raise RuntimeError("MAILFATHOM_KEYRING is empty")
    return hmac.new(ring[0], _normalized(message_id), hashlib.sha256).hexdigest()


def _hashes_under_every_key(message_id: str) -> list[str]:
    if not message_id.strip():
        return []
    text = _normalized(message_id)
    return [hmac.new(key, text, hashlib.sha256).hexdigest() for key in signing.derived_keys(PURPOSE)]


def suppressed_uids(folder: Folder, uidvalidity: int, uids: Iterable[int]) -> set[int]:
    """Return which of `uids` (under `uidvalidity`) in `folder` were erased."""
    wanted = list(uids)
    if not wanted:
        return set()
    return set(
        Suppression.objects.filter(folder=folder, uidvalidity=uidvalidity, uid__in=wanted).values_list(
            "uid", flat=True
        )
    )


def suppressed_message_ids(account_pk: int, message_ids: Iterable[str]) -> set[str]:
    """Return which of `message_ids` belong to mail erased from the account, or erased from
    any account with a deployment-wide suppression."""
    hashes: dict[str, str] = {}
    for message_id in set(message_ids):
        for digest in _hashes_under_every_key(message_id):
            hashes[digest] = message_id
    if not hashes:
        return set()
    found = Suppression.objects.filter(
        Q(account_id=account_pk) | Q(deployment_wide=True), message_id_hash__in=list(hashes)
    ).values_list("message_id_hash", flat=True)
    return {hashes[digest] for digest in found}

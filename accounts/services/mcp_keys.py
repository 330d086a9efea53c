"""API keys for /mcp: create one (shown once), authenticate a Bearer token, revoke one.

A key is a credential of mailfathom.core.credentials behind the `mfk_` marker: 256 random bits,
only its SHA-256 stored, a prefix kept to tell keys apart, its use recorded at most once a
minute.

A key reads every served account unless it is limited to some (docs/operations/
mcp-endpoint.md, Key scopes). The /mcp gate asks `verify`, which remembers a verified key
for VERIFIED_KEY_SECONDS: a busy client costs no query per request, and a revoked key, or a
changed account list, takes effect within that many seconds. Wrong keys are not
remembered (each is a new string); the gate bounds what checking them costs instead.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TypeGuard

from django.db import transaction
from django.utils import timezone

from accounts.models import MailAccount, McpApiKey
from mailfathom.core import credentials

KEYS = credentials.Kind("mfk_")
KEY_MARKER = KEYS.marker
PREFIX_LENGTH = credentials.PREFIX_LENGTH
MAX_TOKEN_LENGTH = 200
MAX_NAME_LENGTH = 100
LAST_USED_RESOLUTION = credentials.LAST_USED_RESOLUTION
VERIFIED_KEY_SECONDS = 5.0
VERIFIED_KEY_CAPACITY = 1024


@dataclass(frozen=True)
class IssuedKey:
    """A key just created: the stored record and the one time the key itself is known."""

    record: McpApiKey
    key: str


_digest = credentials.digest


@dataclass(frozen=True)
class KeyGrant:
    """What a verified key may read: `account_pks` None for every served account."""

    key_pk: int
    account_pks: frozenset[int] | None
    name: str = ""  # the key's name, as records of who read name it (accounts.services.caller)


def accounts_named(account_ids: Iterable[str]) -> list[MailAccount]:
    """The configured accounts with these identifiers; ValueError naming any that is unknown.

    Served or not: a key may be limited to an account the deployment serves later.
    """
    wanted = list(dict.fromkeys(account_id.strip() for account_id in account_ids))
    if not wanted or not all(wanted):
        raise ValueError("Name at least one account identifier, none of them blank.")
    found = {account.account_id: account for account in MailAccount.objects.filter(account_id__in=wanted)}
    unknown = [account_id for account_id in wanted if account_id not in found]
    if unknown:
        raise ValueError(f"No account has the identifier(s): {', '.join(unknown)}.")
    return [found[account_id] for account_id in wanted]


def create_key(name: str, accounts: Iterable[str] | None = None) -> IssuedKey:
    """Create a key named `name` and return it; the key is not stored and cannot be shown again.

    `accounts` (account identifiers) limits the key to those accounts; None lets it read
    every served account. An unknown identifier is a ValueError and creates nothing.
    """
    name = name.strip()
    if not name or len(name) > MAX_NAME_LENGTH:
        raise ValueError(f"A key name must be 1 to {MAX_NAME_LENGTH} characters.")
    limited = None if accounts is None else accounts_named(accounts)
    issued = KEYS.issue()
    key = issued.secret
    with transaction.atomic():
        record = McpApiKey.objects.create(
            name=name, prefix=issued.prefix, key_hash=issued.digest, limited=limited is not None
        )
        if limited is not None:
            record.accounts.set(limited)
    return IssuedKey(record=record, key=key)


def limit_key(key_id: int, accounts: Iterable[str] | None) -> bool:
    """Limit the key with this id to `accounts` (identifiers); None lets it read every account.

    False when there is no such key; a ValueError naming an unknown identifier changes
    nothing. Servers notice within VERIFIED_KEY_SECONDS.
    """
    limited = None if accounts is None else accounts_named(accounts)
    with transaction.atomic():
        record = McpApiKey.objects.select_for_update().filter(pk=key_id).first()
        if record is None:
            return False
        record.limited = limited is not None
        record.save(update_fields=["limited"])
        record.accounts.set(limited or [])
    return True


def authenticate(token: object) -> McpApiKey | None:
    """Return the active key `token` is, or None; record when it was last used.

    Anything that is not a plausible key (not text, empty, too long) is refused before it
    is hashed. A revoked key is refused like an unknown one.
    """
    if not _plausible(token):
        return None
    key = McpApiKey.objects.active().filter(key_hash=_digest(token)).first()
    if key is None:
        return None
    credentials.note_use(key)
    return key


def grant_of(key: McpApiKey) -> KeyGrant:
    """The accounts `key` may read, as the scope layer takes them."""
    if not key.limited:
        return KeyGrant(key_pk=key.pk, account_pks=None, name=key.name)
    # The link table alone: no join to the accounts, so a busy accounts table never holds a key check.
    links = McpApiKey.accounts.through.objects.filter(mcpapikey_id=key.pk)
    return KeyGrant(
        key_pk=key.pk, account_pks=frozenset(links.values_list("mailaccount_id", flat=True)), name=key.name
    )


class _VerifiedKeys:
    """Digests of keys verified in the last `seconds`, with their grants; thread-safe, bounded."""

    def __init__(self, seconds: float, capacity: int) -> None:
        self.seconds, self.capacity = seconds, capacity
        self._lock = threading.Lock()
        self._entries: dict[str, tuple[float, KeyGrant]] = {}

    def get(self, digest: str) -> KeyGrant | None:
        now = time.monotonic()
        with self._lock:
            entry = self._entries.get(digest)
            if entry is None:
                return None
            if entry[0] <= now:
                del self._entries[digest]
                return None
            return entry[1]

    def put(self, digest: str, grant: KeyGrant) -> None:
        now = time.monotonic()
        with self._lock:
            if len(self._entries) >= self.capacity:
                self._entries = {d: e for d, e in self._entries.items() if e[0] > now}
                if len(self._entries) >= self.capacity:
                    self._entries.clear()  # only valid keys get here: a refill costs one query each
            self._entries[digest] = (now + self.seconds, grant)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()


_verified = _VerifiedKeys(VERIFIED_KEY_SECONDS, VERIFIED_KEY_CAPACITY)

# Digests of well-formed tokens no key answered to, refused without a query for a few
# seconds: a client retrying one wrong key (or a flood of it) costs no database work. Safe
# because keys are 256 random bits: a refused digest cannot become a valid key meanwhile.
# A flood of ever-different wrong keys fills it and is cleared; each then costs one query.
REFUSED_KEY_SECONDS = 5.0
REFUSED_KEY_CAPACITY = 10_000
_REFUSED = KeyGrant(key_pk=0, account_pks=frozenset())  # a marker, never handed to a caller
_refused = _VerifiedKeys(REFUSED_KEY_SECONDS, REFUSED_KEY_CAPACITY)


def _plausible(token: object) -> TypeGuard[str]:
    return isinstance(token, str) and bool(token) and len(token) <= MAX_TOKEN_LENGTH


def well_formed(token: object) -> TypeGuard[str]:
    """Whether `token` has the shape of an issued key; anything else is refused with no query."""
    return KEYS.well_formed(token)


def recently_verified(token: object) -> KeyGrant | None:
    """The grant of `token` if it was verified in the last few seconds; no I/O (safe on a loop)."""
    return _verified.get(_digest(token)) if _plausible(token) else None


def recently_refused(token: object) -> bool:
    """Whether `token` was refused in the last few seconds; no I/O (safe on a loop)."""
    return _plausible(token) and _refused.get(_digest(token)) is not None


def verify(token: object) -> KeyGrant | None:
    """Authenticate `token` (recording its use) and return what it may read, or None.

    A verified key is remembered for VERIFIED_KEY_SECONDS, so `recently_verified` answers
    for it without a query until then.
    """
    if not well_formed(token) or recently_refused(token):
        return None
    cached = recently_verified(token)
    if cached is not None:
        return cached
    key = authenticate(token)
    if key is None:
        _refused.put(_digest(token), _REFUSED)
        return None
    grant = grant_of(key)
    _verified.put(_digest(token), grant)
    return grant


def forget_verified_keys() -> None:
    """Forget every remembered verification (a test, or an operator's shell, wants it now)."""
    _verified.clear()
    _refused.clear()


def revoke(key_id: int) -> bool:
    """Revoke the key with this id; False when there is no such key or it was already revoked."""
    return bool(McpApiKey.objects.active().filter(pk=key_id).update(revoked_at=timezone.now()))

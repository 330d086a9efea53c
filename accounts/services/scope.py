"""Scope resolution: the one place every read decides which accounts and folders it may see.

A caller names accounts (identifier, or display name ignoring case) and folders (alias, or
`role:Junk`); the result is the served accounts and, for each, the folders tools may read.
Every read is expressed in a ResolvedScope, so a hidden folder or an unserved account is out
of all of them at once. A key's account limit (`limited_to_accounts`, a context variable
that follows the use case into its thread) is intersected first, so an account outside the
key is refused exactly as an unknown one.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass

from accounts.models import FolderMapping, FolderRole, MailAccount, normalize_alias
from mailfathom.core.errors import (
    FILTER_REFUSED,
    UNKNOWN_ACCOUNT,
    UNKNOWN_FOLDER_ROLE,
    MailFathomError,
)
from mailfathom.core.text import has_control_character

MAX_ACCOUNTS = 64
MAX_FOLDERS = 64
MAX_NAME_LENGTH = 256
ROLE_PREFIX = "role:"


# None: no limit (no key, or a key for every account). A frozenset: the MailAccount primary
# keys the caller's key may read, possibly none.
_key_accounts: ContextVar[frozenset[int] | None] = ContextVar("mailfathom_key_accounts", default=None)


@contextmanager
def limited_to_accounts(account_pks: Collection[int] | None) -> Iterator[None]:
    """Within the block, every scope resolved in this context reaches only `account_pks`.

    None lifts no limit and sets none: the block resolves as the caller's context already did.
    """
    token = _key_accounts.set(None if account_pks is None else frozenset(account_pks))
    try:
        yield
    finally:
        _key_accounts.reset(token)


# None: nobody is watching. A set: every account a scope resolved in this context chose, so a
# caller that records what a read reached (the access trail) learns it without resolving twice.
_observed: ContextVar[set[int] | None] = ContextVar("mailfathom_observed_scope", default=None)


@contextmanager
def observing_scope() -> Iterator[set[int]]:
    """Within the block, collect the primary keys of the accounts every resolved scope chose."""
    seen: set[int] = set()
    token = _observed.set(seen)
    try:
        yield seen
    finally:
        _observed.reset(token)


def reachable_accounts() -> list[MailAccount]:
    """The served accounts this context's caller may read, ordered by identifier."""
    served = MailAccount.objects.served()
    allowed = _key_accounts.get()
    if allowed is not None:
        served = served.filter(pk__in=allowed)
    return list(served.order_by("account_id"))


@dataclass(frozen=True)
class ResolvedFolder:
    mapping_id: int
    alias: str
    role: str  # a FolderRole value, or "" for none


@dataclass(frozen=True)
class ResolvedAccount:
    account_pk: int
    account_id: str
    display_name: str
    folders: tuple[ResolvedFolder, ...]


@dataclass(frozen=True)
class ResolvedScope:
    """The accounts a read may reach and, per account, the folders it may read."""

    accounts: tuple[ResolvedAccount, ...]

    @property
    def account_ids(self) -> tuple[str, ...]:
        return tuple(account.account_id for account in self.accounts)

    @property
    def folder_mapping_ids(self) -> tuple[int, ...]:
        return tuple(folder.mapping_id for account in self.accounts for folder in account.folders)


def _checked_names(names: Iterable[str] | None, limit: int, what: str, argument: str) -> list[str]:
    """Read `names` element by element, refusing at the element that crosses `limit`.

    The count is checked before an element is looked at, so an oversized list is never
    materialized; each name is then checked for length and control characters.
    """
    checked: list[str] = []
    if names is None:
        return checked
    if isinstance(names, str):
        raise MailFathomError(FILTER_REFUSED, f"The {argument} argument must be a list of names.")
    for position, name in enumerate(names):
        if position >= limit:
            raise MailFathomError(FILTER_REFUSED, f"The {argument} argument may name at most {limit} {what}.")
        if not isinstance(name, str) or not name.strip() or len(name) > MAX_NAME_LENGTH:
            raise MailFathomError(
                FILTER_REFUSED,
                f"Each name in {argument} must be 1 to {MAX_NAME_LENGTH} characters and not blank.",
            )
        if has_control_character(name):
            raise MailFathomError(FILTER_REFUSED, f"Names in {argument} may not contain control characters.")
        checked.append(name)
    return checked


def resolve_scope(
    accounts: Iterable[str] | None = None,
    folders: Iterable[str] | None = None,
) -> ResolvedScope:
    """Resolve a caller's account and folder names into the scope a read may use.

    No account names means every served account the caller's key may read. No folder names
    means every folder tools may read. Refusals: 51002 for a list over 64 names or a blank,
    over-long or control-character name; 53001 for an account name no served account of the
    key answers to (one answer for "no such account" and "not yours"); 53003 for a role no readable folder in
    scope carries. An alias that matches nothing is not an error: it reads nothing.
    """
    account_names = _checked_names(accounts, MAX_ACCOUNTS, "accounts", "accounts")
    folder_names = _checked_names(folders, MAX_FOLDERS, "folders", "folders")

    served = reachable_accounts()
    chosen = _match_accounts(served, account_names) if account_names else served

    mappings = FolderMapping.objects.filter(
        account__in=[account.pk for account in chosen], visible_to_tools=True
    ).order_by("alias")
    readable: dict[int, list[FolderMapping]] = {account.pk: [] for account in chosen}
    for mapping in mappings:
        readable[mapping.account_id].append(mapping)

    wanted_aliases, wanted_roles = _split_folder_names(folder_names)
    carried_roles = {mapping.role for rows in readable.values() for mapping in rows if mapping.role}
    for role in wanted_roles:
        if role not in carried_roles:
            raise MailFathomError(
                UNKNOWN_FOLDER_ROLE,
                "The folders argument names a role that no readable folder in scope is mapped with.",
            )

    def wanted(mapping: FolderMapping) -> bool:
        if not folder_names:
            return True
        return mapping.alias in wanted_aliases or (mapping.role != "" and mapping.role in wanted_roles)

    observed = _observed.get()
    if observed is not None:
        observed.update(account.pk for account in chosen)
    return ResolvedScope(
        accounts=tuple(
            ResolvedAccount(
                account_pk=account.pk,
                account_id=account.account_id,
                display_name=account.display_name,
                folders=tuple(
                    ResolvedFolder(mapping_id=m.pk, alias=m.alias, role=m.role)
                    for m in readable[account.pk]
                    if wanted(m)
                ),
            )
            for account in chosen
        )
    )


def _match_accounts(served: list[MailAccount], names: list[str]) -> list[MailAccount]:
    by_id = {account.account_id: account for account in served}
    by_display = {account.display_name.casefold(): account for account in served}
    chosen: dict[int, MailAccount] = {}
    for name in names:
        account = by_id.get(name) or by_display.get(name.casefold())
        if account is None:
            raise MailFathomError(UNKNOWN_ACCOUNT, f"Mail account '{name}' is not accessible.")
        chosen[account.pk] = account
    return sorted(chosen.values(), key=lambda account: account.account_id)


def _split_folder_names(names: list[str]) -> tuple[set[str], set[str]]:
    aliases: set[str] = set()
    roles: set[str] = set()
    known_roles = {role.value for role in FolderRole}
    for name in names:
        if name[: len(ROLE_PREFIX)].casefold() == ROLE_PREFIX:
            role = name[len(ROLE_PREFIX) :].strip().casefold()
            # An unknown role word is carried by no folder: the same answer, 53003.
            roles.add(role if role in known_roles else f"?{role}")
        else:
            aliases.add(normalize_alias(name))
    return aliases, roles

"""Who may see and do what on which mail account: people, their roles, and operators.

A person's accounts come from AccountMembership rows (their own, and their groups'). What
each role allows:

- read (admin's email pages, search and ask, assistants): owner, delegate;
- review drafts: owner, delegate, reviewer;
- approve drafts and connect assistants (OAuth consent for MCP clients): owner.

Operators (the `accounts.see_every_account` permission) and superusers see every account;
for them the functions return None, "no limit", as accounts.services.scope reads it.
Reading mail content stays its own permission (mailbox.view_mail_content) on top of this.
"""

from __future__ import annotations

from typing import Any, TypeVar

from django.db.models import Q, QuerySet

from accounts.models import AccountMembership, MembershipRole

READ_ROLES = frozenset({MembershipRole.OWNER, MembershipRole.DELEGATE})
REVIEW_ROLES = frozenset({MembershipRole.OWNER, MembershipRole.DELEGATE, MembershipRole.REVIEWER})
APPROVE_ROLES = frozenset({MembershipRole.OWNER})
CONNECT_ROLES = frozenset({MembershipRole.OWNER})

SEE_EVERY_ACCOUNT = "accounts.see_every_account"

_Rows = TypeVar("_Rows", bound=QuerySet[Any])


def sees_every_account(user: Any) -> bool:
    """Operators and superusers: every account, whoever its people are."""
    return bool(user and user.is_active and (user.is_superuser or user.has_perm(SEE_EVERY_ACCOUNT)))


def accounts_for(user: Any, roles: frozenset[str]) -> frozenset[int] | None:
    """The MailAccount keys on which `user` holds one of `roles`; None for every account.

    An anonymous or inactive user holds none.
    """
    if user is None or not getattr(user, "is_authenticated", False) or not user.is_active:
        return frozenset()
    if sees_every_account(user):
        return None
    return held_accounts(user, roles)


def held_accounts(user: Any, roles: frozenset[str]) -> frozenset[int]:
    """The accounts `user`'s own people rows (or their groups') give one of `roles`.

    For an operator too, who sees every account but holds roles only on some (what
    notifications tell them about unless they ask for every account).
    """
    rows = AccountMembership.objects.filter(role__in=roles).filter(
        Q(user=user) | Q(group__in=user.groups.all())
    )
    return frozenset(rows.values_list("account_id", flat=True))


def readable_accounts(user: Any) -> frozenset[int] | None:
    return accounts_for(user, READ_ROLES)


def reviewable_accounts(user: Any) -> frozenset[int] | None:
    return accounts_for(user, REVIEW_ROLES)


def approvable_accounts(user: Any) -> frozenset[int] | None:
    return accounts_for(user, APPROVE_ROLES)


def connectable_accounts(user: Any) -> frozenset[int] | None:
    return accounts_for(user, CONNECT_ROLES)


def within(account_pks: frozenset[int] | None, account_pk: int | None) -> bool:
    """Whether `account_pk` is inside a limit as these functions return it."""
    return account_pks is None or (account_pk is not None and account_pk in account_pks)


def limited(rows: _Rows, account_pks: frozenset[int] | None, field: str = "account") -> _Rows:
    """`rows` narrowed to those whose `field` (a MailAccount key or relation) is inside the limit.

    None leaves `rows` as they are; an empty limit yields none. `field` is "pk" for
    MailAccount rows themselves.
    """
    if account_pks is None:
        return rows
    lookup = "pk__in" if field == "pk" else f"{field}__in"
    return rows.filter(**{lookup: account_pks})

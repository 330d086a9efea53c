"""API tokens for scripts reading the compliance API (docs/operations/compliance-api.md).

A token is a credential of mailfathom.core.credentials behind the `mfa_` marker (as MCP keys are
behind `mfk_`): 256 random bits, only its SHA-256 stored. A token
carries its own permissions, chosen among API_PERMISSIONS and never more than its
creator held when it was made; at request time they are intersected again with the
creator's current permissions, so demoting the creator demotes the token.

The model lives here rather than in audit/models.py so the compliance API can grow beside
the trails; audit/models.py imports it, which is how Django finds it.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TypeGuard

from django.conf import settings
from django.contrib.auth.models import AnonymousUser, Permission, User
from django.db import models, transaction
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from mailfathom.core import credentials
from mailfathom.core.labels import label_fields, label_model

TOKENS = credentials.Kind("mfa_")
TOKEN_MARKER = TOKENS.marker
PREFIX_LENGTH = credentials.PREFIX_LENGTH
MAX_NAME_LENGTH = 100
TOKEN_LENGTH = TOKENS.length

# The four permissions of the compliance API, declared on ApiToken's Meta (app label audit).
VIEW_AUDIT = "view_audit"
EXPORT_AUDIT = "export_audit"
REQUEST_ERASURE = "request_erasure"
EXECUTE_ERASURE = "execute_erasure"
API_PERMISSIONS = (VIEW_AUDIT, EXPORT_AUDIT, REQUEST_ERASURE, EXECUTE_ERASURE)


class ApiTokenQuerySet(models.QuerySet["ApiToken"]):
    def active(self) -> ApiTokenQuerySet:
        return self.filter(revoked_at__isnull=True)

    def created_by(self, user: User | AnonymousUser) -> ApiTokenQuerySet:
        return self.filter(created_by_id=user.pk)


class ApiToken(models.Model):
    """A named, revocable credential for the compliance API; the secret itself is never stored."""

    name = models.CharField(max_length=MAX_NAME_LENGTH)
    prefix = models.CharField(
        max_length=PREFIX_LENGTH, help_text=_("The first characters, to tell tokens apart.")
    )
    token_hash = models.CharField(max_length=64, unique=True, editable=False)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens"
    )
    permissions = models.ManyToManyField(Permission, blank=True, related_name="+")
    created_at = models.DateTimeField(default=timezone.now, editable=False)
    last_used_at = models.DateTimeField(null=True, blank=True, editable=False)
    revoked_at = models.DateTimeField(null=True, blank=True, editable=False)

    objects = ApiTokenQuerySet.as_manager()

    class Meta:
        app_label = "audit"
        ordering = ["-created_at", "-id"]
        verbose_name = _("API token")
        permissions = [
            (VIEW_AUDIT, "Can read the audit trails through the compliance API"),
            (EXPORT_AUDIT, "Can export the audit trails through the compliance API"),
            (REQUEST_ERASURE, "Can request the erasure of a person's mail"),
            (EXECUTE_ERASURE, "Can execute a requested erasure"),
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.prefix}…)"

    @property
    def owned_name(self) -> str:
        """The name records give the token: its own (free text, anyone's choice) with its owner's
        user name beside it, so a token called "officer" cannot pass for the officer."""
        return f"{self.name} (token of {self.created_by.get_username()})"[:200]

    @property
    def is_revoked(self) -> bool:
        return self.revoked_at is not None

    def permission_names(self) -> set[str]:
        """The codenames this token carries (of API_PERMISSIONS), whatever its creator holds now."""
        return set(
            self.permissions.filter(content_type__app_label="audit").values_list("codename", flat=True)
        )


@dataclass(frozen=True)
class IssuedToken:
    """A token just created: the stored record and the one time the secret is known."""

    record: ApiToken
    secret: str


class TokenRefused(ValueError):
    """A token cannot be created as asked; the message names the argument, never a value."""


digest = credentials.digest


def api_permissions() -> models.QuerySet[Permission]:
    return Permission.objects.filter(content_type__app_label="audit", codename__in=API_PERMISSIONS)


def held_by(user: User | AnonymousUser) -> set[str]:
    """The API permissions `user` holds now (directly, through a group, or as a superuser)."""
    if not user.is_active:
        return set()
    return {name for name in API_PERMISSIONS if user.has_perm(f"audit.{name}")}


def refusal(user: User, name: object, permissions: Iterable[str]) -> str | None:
    """Why a token named `name` with `permissions` cannot be created for `user`, or None if it can."""
    name = name.strip() if isinstance(name, str) else ""
    if not name or len(name) > MAX_NAME_LENGTH:
        return f"The name argument must be 1 to {MAX_NAME_LENGTH} characters."
    wanted = set(permissions)
    if not wanted or not wanted <= set(API_PERMISSIONS):
        return "The permissions argument must name at least one of: " + ", ".join(API_PERMISSIONS) + "."
    if not wanted <= held_by(user):
        return "The permissions argument asks for a permission its creator does not hold."
    return None


def create_token(user: User, name: str, permissions: Iterable[str]) -> IssuedToken:
    """Create a token for `user` carrying `permissions`; the secret is returned once, stored never.

    TokenRefused (with the sentence of `refusal`) when the name is blank or too long, a
    permission is not one of API_PERMISSIONS, none is asked for, or `user` does not hold one.
    """
    wanted = set(permissions)
    reason = refusal(user, name, wanted)
    if reason is not None:
        raise TokenRefused(reason)
    name = name.strip()
    issued = TOKENS.issue()
    secret = issued.secret
    with transaction.atomic():
        record = ApiToken.objects.create(
            name=name, prefix=issued.prefix, token_hash=issued.digest, created_by=user
        )
        record.permissions.set(api_permissions().filter(codename__in=wanted))
    return IssuedToken(record=record, secret=secret)


def well_formed(secret: object) -> TypeGuard[str]:
    """Whether `secret` has the shape of an issued token; anything else is refused unhashed."""
    return TOKENS.well_formed(secret)


def authenticate(secret: object) -> ApiToken | None:
    """Return the active token `secret` is, or None; record its use at most once a minute.

    A revoked token, or one whose creator is no longer active, is refused like an unknown one.
    """
    if not well_formed(secret):
        return None
    token = ApiToken.objects.active().select_related("created_by").filter(token_hash=digest(secret)).first()
    if token is None or not token.created_by.is_active:
        return None
    credentials.note_use(token)
    return token


def revoke(token_id: int, user: User | None = None) -> bool:
    """Revoke the token (only `user`'s, when given); False if there is none or it was revoked."""
    tokens = ApiToken.objects.active().filter(pk=token_id)
    if user is not None:
        tokens = tokens.created_by(user)
    return bool(tokens.update(revoked_at=timezone.now()))


# Labels Django derived from the field names, the same words made translatable without a
# migration (mailfathom.core.labels says why); and the plural, which Django would build by
# appending an "s" to the translated singular.
label_model(ApiToken, _("API token"), _("API tokens"))
label_fields(
    ApiToken,
    name=_("name"),
    prefix=_("prefix"),
    created_by=_("created by"),
    permissions=_("permissions"),
    created_at=_("created at"),
    last_used_at=_("last used at"),
    revoked_at=_("revoked at"),
)

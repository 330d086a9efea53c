"""Legal holds: mail, and the trail entries about it, that must be preserved until released.

A hold names what it covers by one of three scopes: accounts (every stored email of each),
a person (any email one of their addresses sent or received, in any account), or a case
(emails of the named accounts, received in a range, with one of the named participants;
an empty part matches anything). Addresses are never stored: each is a keyed hash
(HMAC-SHA256 under the "legal-hold" purpose key of mailfathom.core.signing), and mail is
matched by hashing its addresses with the same keys. The row is also the record of the
hold: who placed it and why, who released it, when and why. Rows are never deleted and
never expire (docs/operations/compliance.md, Legal holds).
"""

from __future__ import annotations

import uuid

from django.db import models
from django.utils.translation import gettext_lazy as _

from mailfathom.core.labels import label_fields, label_model


class HoldScope(models.TextChoices):
    ACCOUNT = "account", _("Accounts")
    PERSON = "person", _("Person (addresses)")
    CASE = "case", _("Case (accounts, received range, participants)")


class HoldRequesterKind(models.TextChoices):
    USER = "user", _("User")
    API_TOKEN = "api_token", _("API token")
    COMMAND = "command", _("Management command")


class LegalHoldQuerySet(models.QuerySet["LegalHold"]):
    def active(self) -> LegalHoldQuerySet:
        """Holds placed and not released, oldest first."""
        return self.filter(released_at__isnull=True).order_by("created_at", "id")


class LegalHold(models.Model):
    """One legal hold, from its placement to its release; a released hold stays as the record."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    name = models.CharField(
        max_length=200, help_text=_("How compliance staff refer to the hold (a matter name).")
    )
    reason = models.TextField(
        max_length=2000,
        help_text=_("Why the mail is held: the matter, not its mail (no content, no address)."),
    )
    scope = models.CharField(max_length=16, choices=HoldScope.choices)
    # Identifiers as text, as erasure requests keep them: the record outlives the accounts.
    account_ids = models.JSONField(
        _("accounts"),
        default=list,
        blank=True,
        help_text=_("Account identifiers; for a case, empty means every account."),
    )
    address_hashes = models.JSONField(
        default=list,
        blank=True,
        help_text=_("Keyed hashes (HMAC-SHA256) of the addresses, sorted: never an address."),
    )
    received_on_or_after = models.DateTimeField(null=True, blank=True)
    received_before = models.DateTimeField(null=True, blank=True)
    created_by = models.CharField(_("placed by"), max_length=200)
    created_by_kind = models.CharField(
        _("placed by (kind)"), max_length=16, choices=HoldRequesterKind.choices
    )
    created_at = models.DateTimeField(_("placed at"))
    released_by = models.CharField(max_length=200, blank=True, default="")
    released_by_kind = models.CharField(
        max_length=16, choices=HoldRequesterKind.choices, blank=True, default=""
    )
    released_at = models.DateTimeField(null=True, blank=True)
    release_reason = models.TextField(max_length=2000, blank=True, default="")

    objects = LegalHoldQuerySet.as_manager()

    class Meta:
        app_label = "audit"
        verbose_name = _("legal hold")
        ordering = ["-created_at"]
        permissions = [("manage_legalhold", "Can place and release legal holds")]
        constraints = [
            # A release is whole (who, when, why) or absent: a hold is never released without a reason.
            models.CheckConstraint(
                condition=(
                    models.Q(released_at__isnull=True, released_by="", release_reason="")
                    | (
                        models.Q(released_at__isnull=False)
                        & ~models.Q(released_by="")
                        & ~models.Q(release_reason="")
                    )
                ),
                name="legal_hold_release_is_whole",
            ),
        ]
        indexes = [models.Index(fields=["released_at"], name="legal_hold_active")]

    def __str__(self) -> str:
        return f"{self.name} ({self.id})"

    @property
    def is_active(self) -> bool:
        return self.released_at is None


# Labels Django derived from the field names, the same words made translatable without a
# migration (mailfathom.core.labels says why); the plural too, which Django would otherwise
# build by appending an "s" to the translated singular.
label_model(LegalHold, _("legal hold"), _("legal holds"))
label_fields(
    LegalHold,
    id=_("id"),
    name=_("name"),
    reason=_("reason"),
    scope=_("scope"),
    address_hashes=_("address hashes"),
    received_on_or_after=_("received on or after"),
    received_before=_("received before"),
    released_by=_("released by"),
    released_by_kind=_("released by kind"),
    released_at=_("released at"),
    release_reason=_("release reason"),
)

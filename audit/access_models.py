"""The access trail: who read mail, through which door, and which emails they were handed.

One entry per account per read (a tool call, an admin page, a people-page search or
question), written only for accounts whose access trail is on. It names the requester as
text, never by foreign key, and the emails by foreign key, so erasing a message erases it
from every entry that named it while the entry stays (docs/operations/compliance.md,
Access trail). No content, no query, no question: identifiers, names and counts.
"""

from __future__ import annotations

from datetime import datetime

from django.db import models
from django.utils.translation import gettext_lazy as _

from accounts.models import MailAccount
from mailbox.models import Email
from mailfathom.core.labels import label_fields


class AccessChannel(models.TextChoices):
    MCP = "mcp", _("MCP tool call")
    ADMIN = "admin", _("Admin page")
    API = "api", _("Compliance API")
    PEOPLE_PAGE = "people_page", _("Search and ask page")


class AccessRequesterKind(models.TextChoices):
    PERSON = "person", _("Person (signed-in user)")
    MCP_KEY = "mcp_key", _("MCP API key")
    OAUTH_TOKEN = "oauth_token", _("MCP OAuth token")
    API_TOKEN = "api_token", _("Compliance API token")
    UNAUTHENTICATED = "unauthenticated", _("Unauthenticated (loopback /mcp)")
    TASK = "task", _("Task (no caller)")


# What the trail publishes of an entry, in this order: the admin's fields read it.
ACCESS_TRAIL_FIELDS = (
    "accessed_at",
    "account_identifier",
    "channel",
    "action",
    "requester_kind",
    "requester",
    "owner",
    "client_name",
    "email_count",
)


class AccessEntryQuerySet(models.QuerySet["AccessEntry"]):
    def expired(self, account: MailAccount, before: datetime) -> AccessEntryQuerySet:
        """This account's entries of reads before `before`, oldest first."""
        return self.filter(account=account, accessed_at__lt=before).order_by("accessed_at", "id")


class AccessEntry(models.Model):
    """One read of one account's mail: who, through what, when, and how many emails it returned."""

    # SET_NULL and the identifier as text: who read an account's mail stays on record after
    # the account row is gone, until the window recorded below expires.
    account = models.ForeignKey(
        MailAccount, on_delete=models.SET_NULL, null=True, blank=True, related_name="access_entries"
    )
    account_identifier = models.CharField(_("account identifier"), max_length=64)
    accessed_at = models.DateTimeField()
    channel = models.CharField(max_length=16, choices=AccessChannel.choices)
    action = models.CharField(max_length=64, help_text=_("The tool or page that read the mail."))
    requester_kind = models.CharField(max_length=16, choices=AccessRequesterKind.choices)
    requester = models.CharField(
        max_length=200, blank=True, default="", help_text=_("User name, or the key's or token's name.")
    )
    owner = models.CharField(
        max_length=200, blank=True, default="", help_text=_("The person the key or token belongs to.")
    )
    client_name = models.CharField(
        max_length=100, blank=True, default="", help_text=_("The client's own name, where it gave one.")
    )
    email_count = models.PositiveIntegerField(
        default=0, help_text=_("Emails of this account the read returned.")
    )
    # The account's window when the entry was written: what retention applies once the
    # account row is gone and no window can be read from it.
    retention_days = models.PositiveIntegerField()

    objects = AccessEntryQuerySet.as_manager()

    class Meta:
        verbose_name = _("access entry")
        verbose_name_plural = _("access trail")
        ordering = ["-accessed_at", "-id"]
        indexes = [models.Index(fields=["account", "accessed_at"], name="access_entry_retention")]

    def __str__(self) -> str:
        return f"{self.action} on {self.account_identifier}"


class AccessEntryEmail(models.Model):
    """An email one read returned, in the order the read returned it."""

    entry = models.ForeignKey(AccessEntry, on_delete=models.CASCADE, related_name="emails")
    # Erasing the message erases it from every entry that named it (as the answering trail).
    email = models.ForeignKey(Email, on_delete=models.CASCADE, related_name="access_entries")
    position = models.PositiveIntegerField(help_text=_("0 for the first email the read returned."))

    class Meta:
        verbose_name = _("email returned")
        ordering = ["entry", "position"]
        constraints = [
            models.UniqueConstraint(fields=["entry", "email"], name="access_email_once_per_entry"),
        ]

    def __str__(self) -> str:
        return str(self.email_id)


# Labels Django derived from the field names, the same words made translatable without a
# migration (mailfathom.core.labels says why). AccessEntryEmail's plural is its inline's
# (audit.admin), the one place it shows.
label_fields(
    AccessEntry,
    account=_("account"),
    accessed_at=_("accessed at"),
    channel=_("channel"),
    action=_("action"),
    requester_kind=_("requester kind"),
    requester=_("requester"),
    owner=_("owner"),
    client_name=_("client name"),
    email_count=_("email count"),
    retention_days=_("retention days"),
)
label_fields(AccessEntryEmail, position=_("position"), email=_("email"))

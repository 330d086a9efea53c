"""The record of an erasure request: who asked, what it would remove, what it removed.

It never holds an address. Each address is kept as a keyed hash (HMAC-SHA256 under the
"erasure-request" purpose key of mailfathom.core.signing), so the table cannot become a list of
the people who asked to be forgotten; the addresses live in memory only while a request
is previewed or executed, and executing later means supplying them again
(docs/operations/compliance.md, Erasure requests).
"""

from __future__ import annotations

import uuid

from django.db import models
from django.utils.translation import gettext_lazy as _

from mailfathom.core.labels import label_fields, label_model


class ErasureRequesterKind(models.TextChoices):
    USER = "user", _("User")
    API_TOKEN = "api_token", _("API token")
    COMMAND = "command", _("Management command")


class ErasureStatus(models.TextChoices):
    PREVIEWED = "previewed", _("Previewed")
    EXECUTED = "executed", _("Executed")
    ABANDONED = "abandoned", _("Abandoned")


class ErasureRequestRecord(models.Model):
    """One data-subject erasure request, from its preview to its execution or abandonment."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    requested_by = models.CharField(max_length=200, help_text=_("User name, API token name or OS user."))
    requested_by_kind = models.CharField(max_length=16, choices=ErasureRequesterKind.choices)
    # The Django user behind the request: the user name, or the owner of the API token. Who
    # executes is compared with it (four eyes); empty on records made before it was kept.
    requested_by_person = models.CharField(max_length=150, blank=True, default="")
    requested_at = models.DateTimeField()
    address_hashes = models.JSONField(
        default=list, help_text=_("Keyed hashes (HMAC-SHA256) of the addresses, sorted: never an address.")
    )
    # Identifiers as text, not foreign keys: the record outlives the accounts it names.
    account_ids = models.JSONField(default=list, blank=True, help_text=_("Empty: every account."))
    received_on_or_after = models.DateTimeField(null=True, blank=True)
    received_before = models.DateTimeField(null=True, blank=True)
    accounts_only = models.BooleanField(
        default=False,
        help_text=_(
            "Suppress the erased mail only in the accounts it was erased from; "
            "off: in every account of the deployment."
        ),
    )
    status = models.CharField(max_length=16, choices=ErasureStatus.choices, default=ErasureStatus.PREVIEWED)
    preview_counts = models.JSONField(default=dict, help_text=_("Per account identifier, per kind."))
    executed_at = models.DateTimeField(null=True, blank=True)
    executed_by = models.CharField(max_length=200, blank=True, default="")
    executed_by_kind = models.CharField(max_length=16, choices=ErasureRequesterKind.choices, blank=True)
    executed_by_person = models.CharField(max_length=150, blank=True, default="")
    single_operator = models.BooleanField(
        default=False, help_text=_("MAILFATHOM_ERASURE_SINGLE_OPERATOR was on when it was executed.")
    )
    statement_counts = models.JSONField(
        default=dict, blank=True, help_text=_("What was erased, per account identifier, per kind.")
    )
    message_id_hashes = models.JSONField(
        default=list,
        blank=True,
        help_text=_("Keyed hashes of the erased messages' Message-IDs (the suppression key), sorted."),
    )
    suppressions = models.JSONField(
        default=dict, blank=True, help_text=_("The suppressions written: scope, count, row ids, per account.")
    )
    removed_rows = models.JSONField(
        default=dict,
        blank=True,
        help_text=_("Rows of other apps (trails, drafts) removed with the mail: per model, count and ids."),
    )
    cleanup_completed_at = models.DateTimeField(null=True, blank=True)
    cleanup_steps = models.JSONField(
        default=list, blank=True, help_text=_("What the clean-up ran and how it went.")
    )
    # The statement as signed (Ed25519 under the deployment's "erasure-statement" key), so a
    # later reading checks exactly what was signed.
    statement_document = models.JSONField(null=True, blank=True)
    statement_signature = models.CharField(max_length=200, blank=True, default="")
    statement_public_key = models.CharField(max_length=100, blank=True, default="")
    statement_signed_at = models.DateTimeField(null=True, blank=True)
    failure_code = models.PositiveIntegerField(
        null=True, blank=True, help_text=_("The five-digit code of the last execution attempt that failed.")
    )
    # The mutation-trail entries the execution wrote (none for an account whose trail is off).
    mutation_entries = models.ManyToManyField(
        "audit.MutationEntry", blank=True, related_name="erasure_requests"
    )

    class Meta:
        app_label = "audit"
        verbose_name = _("erasure request")
        ordering = ["-requested_at"]
        permissions = [("execute_erasurerequestrecord", "Can execute or abandon an erasure request")]

    def __str__(self) -> str:
        return f"erasure request {self.id}"


# Labels Django derived from the field names, the same words made translatable without a
# migration (mailfathom.core.labels says why); and the plural, which Django would build by
# appending an "s" to the translated singular.
label_model(ErasureRequestRecord, _("erasure request"), _("erasure requests"))
label_fields(
    ErasureRequestRecord,
    id=_("id"),
    requested_by=_("requested by"),
    requested_by_kind=_("requested by kind"),
    requested_by_person=_("requested by person"),
    requested_at=_("requested at"),
    address_hashes=_("address hashes"),
    account_ids=_("account ids"),
    received_on_or_after=_("received on or after"),
    received_before=_("received before"),
    accounts_only=_("accounts only"),
    status=_("status"),
    executed_at=_("executed at"),
    executed_by=_("executed by"),
    executed_by_kind=_("executed by kind"),
    executed_by_person=_("executed by person"),
    single_operator=_("single operator"),
    statement_counts=_("statement counts"),
    suppressions=_("suppressions"),
    removed_rows=_("removed rows"),
    cleanup_completed_at=_("cleanup completed at"),
    statement_signed_at=_("statement signed at"),
    failure_code=_("failure code"),
)

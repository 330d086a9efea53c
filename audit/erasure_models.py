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


class ErasureRequesterKind(models.TextChoices):
    USER = "user", "User"
    API_TOKEN = "api_token", "API token"
    COMMAND = "command", "Management command"


class ErasureStatus(models.TextChoices):
    PREVIEWED = "previewed", "Previewed"
    EXECUTED = "executed", "Executed"
    ABANDONED = "abandoned", "Abandoned"


class ErasureRequestRecord(models.Model):
    """One data-subject erasure request, from its preview to its execution or abandonment."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    requested_by = models.CharField(max_length=200, help_text="User name, API token name or OS user.")
    requested_by_kind = models.CharField(max_length=16, choices=ErasureRequesterKind.choices)
    # The Django user behind the request: the user name, or the owner of the API token. Who
    # executes is compared with it (four eyes); empty on records made before it was kept.
    requested_by_person = models.CharField(max_length=150, blank=True, default="")
    requested_at = models.DateTimeField()
    address_hashes = models.JSONField(
        default=list, help_text="Keyed hashes (HMAC-SHA256) of the addresses, sorted: never an address."
    )
    # Identifiers as text, not foreign keys: the record outlives the accounts it names.
    account_ids = models.JSONField(default=list, blank=True, help_text="Empty: every account.")
    received_on_or_after = models.DateTimeField(null=True, blank=True)
    received_before = models.DateTimeField(null=True, blank=True)
    accounts_only = models.BooleanField(
        default=False,
        help_text="Suppress the erased mail only in the accounts it was erased from; "
        "off: in every account of the deployment.",
    )
    status = models.CharField(max_length=16, choices=ErasureStatus.choices, default=ErasureStatus.PREVIEWED)
    preview_counts = models.JSONField(default=dict, help_text="Per account identifier, per kind.")
    executed_at = models.DateTimeField(null=True, blank=True)
    executed_by = models.CharField(max_length=200, blank=True, default="")
    executed_by_kind = models.CharField(max_length=16, choices=ErasureRequesterKind.choices, blank=True)
    executed_by_person = models.CharField(max_length=150, blank=True, default="")
    single_operator = models.BooleanField(
        default=False, help_text="MAILFATHOM_ERASURE_SINGLE_OPERATOR was on when it was executed."
    )
    statement_counts = models.JSONField(
        default=dict, blank=True, help_text="What was erased, per account identifier, per kind."
    )
    message_id_hashes = models.JSONField(
        default=list,
        blank=True,
        help_text="Keyed hashes of the erased messages' Message-IDs (the suppression key), sorted.",
    )
    suppressions = models.JSONField(
        default=dict, blank=True, help_text="The suppressions written: scope, count, row ids, per account."
    )
    removed_rows = models.JSONField(
        default=dict,
        blank=True,
        help_text="Rows of other apps (trails, drafts) removed with the mail: per model, count and ids.",
    )
    cleanup_completed_at = models.DateTimeField(null=True, blank=True)
    cleanup_steps = models.JSONField(
        default=list, blank=True, help_text="What the clean-up ran and how it went."
    )
    # The statement as signed (Ed25519 under the deployment's "erasure-statement" key), so a
    # later reading checks exactly what was signed.
    statement_document = models.JSONField(null=True, blank=True)
    statement_signature = models.CharField(max_length=200, blank=True, default="")
    statement_public_key = models.CharField(max_length=100, blank=True, default="")
    statement_signed_at = models.DateTimeField(null=True, blank=True)
    failure_code = models.PositiveIntegerField(
        null=True, blank=True, help_text="The five-digit code of the last execution attempt that failed."
    )
    # The mutation-trail entries the execution wrote (none for an account whose trail is off).
    mutation_entries = models.ManyToManyField(
        "audit.MutationEntry", blank=True, related_name="erasure_requests"
    )

    class Meta:
        app_label = "audit"
        verbose_name = "erasure request"
        ordering = ["-requested_at"]
        permissions = [("execute_erasurerequestrecord", "Can execute or abandon an erasure request")]

    def __str__(self) -> str:
        return f"erasure request {self.id}"

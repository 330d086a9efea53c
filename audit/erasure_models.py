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
    requested_at = models.DateTimeField()
    address_hashes = models.JSONField(
        default=list, help_text="Keyed hashes (HMAC-SHA256) of the addresses, sorted: never an address."
    )
    # Identifiers as text, not foreign keys: the record outlives the accounts it names.
    account_ids = models.JSONField(default=list, blank=True, help_text="Empty: every account.")
    received_on_or_after = models.DateTimeField(null=True, blank=True)
    received_before = models.DateTimeField(null=True, blank=True)
    status = models.CharField(max_length=16, choices=ErasureStatus.choices, default=ErasureStatus.PREVIEWED)
    preview_counts = models.JSONField(default=dict, help_text="Per account identifier, per kind.")
    executed_at = models.DateTimeField(null=True, blank=True)
    executed_by = models.CharField(max_length=200, blank=True, default="")
    executed_by_kind = models.CharField(max_length=16, choices=ErasureRequesterKind.choices, blank=True)
    statement_counts = models.JSONField(
        default=dict, blank=True, help_text="What was erased, per account identifier, per kind."
    )
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

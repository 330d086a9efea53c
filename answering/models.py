"""Answering's rows: reply drafts and their runs; ask_mail keeps none here.

A question leaves no row in this app (its audit entry lives in `audit`). Drafting keeps one
Draft per answered email, a DraftAttempt per email a run refused (so a refusal is counted and
held back rather than silently retried), a DraftRun per run, and the reference documents an
operator uploads for drafts, in chunks (docs/operations/drafting.md).
"""

from __future__ import annotations

from django.conf import settings
from django.contrib.postgres.fields import ArrayField
from django.contrib.postgres.indexes import GinIndex
from django.contrib.postgres.search import SearchVector, SearchVectorField
from django.db import models
from django.utils.translation import gettext_lazy as _
from pgvector.django import VectorField

from accounts.models import MailAccount
from mailbox.ids import uuid7
from mailbox.models import Email, EmbeddingProfile, Folder
from mailfathom.core.labels import label_fields, label_model


class Intent(models.TextChoices):
    INQUIRY = "inquiry", _("Inquiry")
    REQUEST = "request", _("Request")
    ORDER = "order", _("Order")
    COMPLAINT = "complaint", _("Complaint")
    SCHEDULING = "scheduling", _("Scheduling")
    FOLLOW_UP = "follow-up", _("Follow-up")
    OTHER = "other", _("Other")


class Verdict(models.TextChoices):
    READY = "ready", _("Ready")
    NEEDS_REVIEW = "needs_review", _("Needs review")


class DraftStatus(models.TextChoices):
    PENDING = "pending", _("Pending review")
    APPROVED = "approved", _("Approved")
    EDITED = "edited", _("Edited and approved")
    DISCARDED = "discarded", _("Discarded")


class DraftQuerySet(models.QuerySet["Draft"]):
    def waiting_for_review(self) -> DraftQuerySet:
        """Drafts no reviewer has approved, edited or discarded yet: the queue's pending rows."""
        return self.filter(status=DraftStatus.PENDING)

    def waiting_per_account(self) -> dict[int, int]:
        """How many drafts wait for review on each account that has any, in one grouped query."""
        rows = self.waiting_for_review().order_by().values_list("account_id").annotate(n=models.Count("pk"))
        return dict(rows.values_list("account_id", "n"))


class Draft(models.Model):
    """A reply proposed for one incoming email, with the verdict computed on it."""

    id = models.UUIDField(primary_key=True, default=uuid7, editable=False)
    account = models.ForeignKey(MailAccount, on_delete=models.CASCADE, related_name="drafts")
    # One draft per answered email: the gate's "no draft exists" is this row's absence.
    email = models.OneToOneField(Email, on_delete=models.CASCADE, related_name="draft")
    body = models.TextField()
    intent = models.CharField(max_length=16, choices=Intent.choices)
    language = models.CharField(max_length=2, help_text=_("ISO 639-1, as classified."))
    # Email ids the draft was grounded in, in ranking order (plain values: a source erased
    # later must not take the draft with it).
    source_ids = ArrayField(models.UUIDField(), default=list, blank=True)
    # The thread messages and reference chunks it was grounded in too: with source_ids,
    # what a re-assessment after an edit reads again (plain values, as source_ids are).
    thread_ids = ArrayField(models.UUIDField(), default=list, blank=True)
    reference_ids = ArrayField(models.BigIntegerField(), default=list, blank=True)
    verdict = models.CharField(max_length=16, choices=Verdict.choices)
    reasons = models.JSONField(default=list, blank=True, help_text=_("Why the verdict is not ready."))
    # One entry per flagged fact: {"code", "kind", "start", "end", "origins": [email ids]}, so
    # the review page can mark it in the body and link where it came from.
    findings = models.JSONField(default=list, blank=True)
    # Open reasons a reviewer acknowledged when approving: [{"code", "reason", "by", "at"}].
    acknowledgements = models.JSONField(default=list, blank=True)
    assessed_at = models.DateTimeField(
        null=True, blank=True, help_text=_("When the verdict was last computed.")
    )
    note = models.TextField(blank=True, default="", help_text=_("What the reviewer should know."))
    model_alias = models.CharField(_("drafting endpoint alias"), max_length=200)
    # {"classify": {"prompt": n, "completion": n}, ...}: counts only.
    tokens = models.JSONField(default=dict, blank=True)
    status = models.CharField(max_length=16, choices=DraftStatus.choices, default=DraftStatus.PENDING)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)
    reviewed_at = models.DateTimeField(null=True, blank=True)
    reviewed_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )

    # Where the draft sits on the mail server, once appended to the Drafts-role folder.
    remote_message_id = models.CharField(max_length=998, blank=True, default="")
    remote_folder = models.ForeignKey(
        Folder, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    remote_uidvalidity = models.BigIntegerField(null=True, blank=True)
    remote_uid = models.BigIntegerField(null=True, blank=True)
    appended_at = models.DateTimeField(null=True, blank=True)

    objects = DraftQuerySet.as_manager()

    class Meta:
        ordering = ["created_at"]
        indexes = [models.Index(fields=["account", "status", "created_at"], name="draft_review_queue")]

    def __str__(self) -> str:
        return str(self.id)


class AttemptOutcome(models.TextChoices):
    CLASSIFY_REFUSED = "classify_refused", "Classification refused"
    STOPPED_ON_LENGTH = "stopped_on_length", "Reply stopped on length"
    CONTENT_FILTERED = "content_filtered", "Reply content-filtered"
    PROVIDER_FAILED = "provider_failed", "Provider failed"
    CEILING_REACHED = "ceiling_reached", "Spend ceiling reached"


class DraftAttempt(models.Model):
    """A drafting run over one email that wrote no draft: counts and a code, no content."""

    account = models.ForeignKey(MailAccount, on_delete=models.CASCADE, related_name="+")
    email = models.ForeignKey(Email, on_delete=models.CASCADE, related_name="draft_attempts")
    stage = models.CharField(max_length=16)
    outcome = models.CharField(max_length=32, choices=AttemptOutcome.choices)
    model_alias = models.CharField(max_length=200, blank=True, default="")
    tokens = models.JSONField(default=dict, blank=True)
    attempted_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-attempted_at"]
        indexes = [models.Index(fields=["email", "-attempted_at"], name="draft_attempt_email")]

    def __str__(self) -> str:
        return f"{self.stage}: {self.outcome}"


class RunTrigger(models.TextChoices):
    SCHEDULE = "schedule", "Schedule"
    SYNCHRONIZATION = "synchronization", "New mail synchronized"
    DRAFT_NOW = "draft_now", "Draft now (admin)"
    COMMAND = "command", "manage.py draft"
    SWITCHED_ON = "switched_on", "Drafting switched on"


class DraftRun(models.Model):
    """One drafting run over one account: what started it and what it did, in counts only.

    Written by answering.drafting.runs.draft_account when the run begins and again when it
    ends; a row whose ended_at stays empty is a run that never finished (its worker died).
    """

    account = models.ForeignKey(MailAccount, on_delete=models.CASCADE, related_name="+")
    trigger = models.CharField(max_length=16, choices=RunTrigger.choices)
    started_at = models.DateTimeField()
    ended_at = models.DateTimeField(null=True, blank=True)
    considered = models.PositiveIntegerField(default=0)
    drafted = models.PositiveIntegerField(default=0)
    # {AttemptOutcome value: count} of the emails this run refused.
    refused = models.JSONField(default=dict, blank=True)
    already_drafted = models.PositiveIntegerField(default=0)
    vanished = models.PositiveIntegerField(default=0)
    failed = models.PositiveIntegerField(default=0)
    delivered = models.PositiveIntegerField(default=0)
    delivery_failed = models.PositiveIntegerField(default=0)
    stopped_by = models.CharField(max_length=16, blank=True, default="")  # "ledger", "provider"
    skipped = models.CharField(max_length=200, blank=True, default="")  # why nothing ran
    # Set when a reader found the run unfinished with no process holding its account
    # (answering.drafting.runs.mark_interrupted_runs): its worker died.
    interrupted_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-started_at"]
        indexes = [models.Index(fields=["account", "-started_at"], name="draft_run_latest")]

    def __str__(self) -> str:
        return f"{self.trigger} at {self.started_at:%Y-%m-%d %H:%M:%S}"

    @property
    def refused_total(self) -> int:
        return sum(self.refused.values())

    @property
    def seconds(self) -> float | None:
        """How long the run took; None while it runs (or if it never finished)."""
        return None if self.ended_at is None else (self.ended_at - self.started_at).total_seconds()


class ReferenceDocument(models.Model):
    """A document an operator uploads for one account's drafts: a price list, a policy, an FAQ.

    Stored whole, cut into chunks that are indexed and embedded like mail, and searched
    only while drafting's rerank pass is on (docs/operations/drafting.md, rerank).
    """

    id = models.UUIDField(primary_key=True, default=uuid7, editable=False)
    account = models.ForeignKey(MailAccount, on_delete=models.CASCADE, related_name="reference_documents")
    title = models.CharField(max_length=200)
    text = models.TextField()
    uploaded_at = models.DateTimeField(auto_now_add=True)
    # Where the text came from when it was read from a file (all blank when it was pasted):
    # the sanitized file name, the media type the browser declared, the extraction's outcome
    # and how many characters it gave.
    source_file_name = models.CharField(max_length=255, blank=True, default="")
    source_media_type = models.CharField(max_length=100, blank=True, default="")
    source_outcome = models.CharField(max_length=16, blank=True, default="")
    source_characters = models.PositiveIntegerField(null=True, blank=True)

    class Meta:
        ordering = ["account", "title"]

    def __str__(self) -> str:
        return self.title


class ReferenceChunk(models.Model):
    """One bounded piece of a reference document, with its lexical index and its vector."""

    document = models.ForeignKey(ReferenceDocument, on_delete=models.CASCADE, related_name="chunks")
    position = models.PositiveIntegerField()
    text = models.TextField()
    search_vector = models.GeneratedField(
        expression=SearchVector("text", config="simple"),
        output_field=SearchVectorField(),
        db_persist=True,
    )
    # The vector under `profile`; null until embedded (lexical search still finds the chunk).
    profile = models.ForeignKey(
        EmbeddingProfile, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    embedding = VectorField(dimensions=None, null=True, blank=True)

    class Meta:
        ordering = ["document", "position"]
        constraints = [
            models.UniqueConstraint(fields=["document", "position"], name="reference_chunk_position_unique")
        ]
        indexes = [GinIndex(fields=["search_vector"], name="reference_chunk_search")]

    def __str__(self) -> str:
        return f"{self.document_id}:{self.position}"


# Labels Django derived from the field and model names, the same words made translatable
# without a migration (mailfathom.core.labels says why).
label_model(Draft, _("draft"), _("drafts"))
label_model(ReferenceDocument, _("reference document"), _("reference documents"))
label_fields(
    ReferenceDocument, account=_("account"), title=_("title"), text=_("text"), uploaded_at=_("uploaded at")
)
label_fields(
    Draft,
    account=_("account"),
    email=_("email"),
    intent=_("intent"),
    verdict=_("verdict"),
    status=_("status"),
    created_at=_("created at"),
    reviewed_at=_("reviewed at"),
    reviewed_by=_("reviewed by"),
)

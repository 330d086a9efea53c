"""The two audit trails: what a question read, and what MailFathom changed.

Neither holds mail content. An answering entry names emails by foreign key, so erasing a
message erases it from every run that read it; a mutation entry names its email by plain
values, so it outlives the message whose deletion it may record
(docs/operations/compliance.md). The access trail (who read which mail) is defined in
audit.access_models.
"""

from __future__ import annotations

from datetime import datetime

from django.db import models
from django.utils.translation import gettext_lazy as _

from accounts.models import MailAccount
from audit.access_models import AccessEntry, AccessEntryEmail  # noqa: F401  (a model of this app, defined beside it)
from audit.api_tokens import ApiToken  # noqa: F401  (a model of this app, defined beside it)
from audit.case_export_models import CaseExport  # noqa: F401  (a model of this app, defined beside it)
from audit.chain_models import TrailHead, TrailLink  # noqa: F401  (models of this app, defined beside it)
from audit.erasure_models import ErasureRequestRecord  # noqa: F401  (a model of this app, defined beside it)
from audit.hold_models import LegalHold  # noqa: F401  (a model of this app, defined beside it)
from mailbox.models import Email
from mailfathom.core.labels import label_fields, label_model


class RunOutcome(models.TextChoices):
    ANSWERED = "answered", _("Answered")
    ANSWER_EMPTY = "answer_empty", _("Answer empty")
    PROVIDER_FAILED = "provider_failed", _("Provider failed")
    RUN_CEILING_REACHED = "run_ceiling_reached", _("Run ceiling reached")
    CANCELLED = "cancelled", _("Cancelled")
    FAILED = "failed", _("Failed")


class AnsweringRunEntryQuerySet(models.QuerySet["AnsweringRunEntry"]):
    def expired(self, account: MailAccount, before: datetime) -> AnsweringRunEntryQuerySet:
        """This account's entries of runs that ended before `before`, oldest first."""
        return self.filter(account=account, ended_at__lt=before).order_by("ended_at", "id")


class AnsweringRunEntry(models.Model):
    """One account's share of one ask_mail run: which of its emails the run read, and how it ended."""

    run_id = models.UUIDField(db_index=True, help_text=_("Shared by the entries of every account in scope."))
    # An account's deletion takes its stored mail with it, and this record follows the mail.
    account = models.ForeignKey(MailAccount, on_delete=models.CASCADE, related_name="answering_runs")
    chat_alias = models.CharField(_("chat endpoint alias"), max_length=200)
    instruction_version = models.CharField(max_length=100)
    started_at = models.DateTimeField()
    ended_at = models.DateTimeField()
    outcome = models.CharField(max_length=32, choices=RunOutcome.choices)
    retrieval_ceiling_reached = models.BooleanField(default=False)
    relevance_fell_back = models.BooleanField(_("relevance pass fell back"), default=False)
    # Who asked, as text (accounts.services.caller): empty for a run with no caller (a test, a shell).
    requester_kind = models.CharField(max_length=16, blank=True, default="")
    requester = models.CharField(
        max_length=200, blank=True, default="", help_text=_("User name, or key or token name.")
    )
    requester_owner = models.CharField(
        _("requester's owner"),
        max_length=200,
        blank=True,
        default="",
        help_text=_("The person a key or token belongs to."),
    )
    client_name = models.CharField(max_length=100, blank=True, default="")

    objects = AnsweringRunEntryQuerySet.as_manager()

    class Meta:
        verbose_name = _("answering run entry")
        verbose_name_plural = _("answering audit trail")
        ordering = ["-ended_at", "-id"]
        constraints = [
            models.UniqueConstraint(fields=["run_id", "account"], name="answering_entry_one_per_account"),
        ]
        indexes = [models.Index(fields=["account", "ended_at"], name="answering_entry_retention")]

    def __str__(self) -> str:
        return f"run {self.run_id} ({self.account_id})"


class AnsweringRunEmail(models.Model):
    """An email one run retrieved, at the place the run first reached it."""

    entry = models.ForeignKey(AnsweringRunEntry, on_delete=models.CASCADE, related_name="emails")
    # Erasing the message erases it from the runs that read it.
    email = models.ForeignKey(Email, on_delete=models.CASCADE, related_name="answering_runs")
    position = models.PositiveIntegerField(help_text=_("0 for the first email the run reached."))
    cited = models.BooleanField(default=False)
    relied_on_rank = models.PositiveIntegerField(
        _("relied-on rank"),
        null=True,
        blank=True,
        help_text=_("1 for the first source the answer cited by its number; empty when it cited none of it."),
    )

    class Meta:
        verbose_name = _("retrieved email")
        ordering = ["entry", "position"]
        constraints = [
            models.UniqueConstraint(fields=["entry", "email"], name="answering_email_once_per_entry"),
        ]

    def __str__(self) -> str:
        return str(self.email_id)


class MutationKind(models.TextChoices):
    ERASURE_EXECUTED = "erasure_executed", _("Erasure executed")
    ACCOUNT_MAIL_DELETED = "account_mail_deleted", _("Account's stored mail deleted")
    FOLDER_MAIL_DELETED = "folder_mail_deleted", _("Folder's stored mail deleted")
    DRAFT_APPENDED = "draft_appended", _("Draft appended")
    DRAFT_REPLACED = "draft_replaced", _("Draft replaced (superseded copy removed)")
    DRAFT_REMOVED = "draft_removed", _("Draft removed")
    # Not a change to the mail: the compliance act of exporting it (audit.services.case_export).
    CASE_EXPORTED = "case_exported", _("Case export written")


class RequesterKind(models.TextChoices):
    USER = "user", _("User")
    API_TOKEN = "api_token", _("API token")
    TASK = "task", _("Task")


class MutationOutcome(models.TextChoices):
    PERFORMED = "performed", _("Performed")
    ABANDONED = "abandoned", _("Abandoned")


# What the mutation trail publishes of an entry, in this order: the compliance API's export
# columns and the admin's fields (which add the account link and the retention) read it.
MUTATION_TRAIL_FIELDS = (
    "id",
    "kind",
    "requester",
    "requester_kind",
    "account_identifier",
    "message_id_hash",
    "folder_alias",
    "uid",
    "requested_at",
    "completed_at",
    "outcome",
    "failure_code",
    "counts",
)


class MutationEntryQuerySet(models.QuerySet["MutationEntry"]):
    def expired(self, account: MailAccount, before: datetime) -> MutationEntryQuerySet:
        """This account's entries requested before `before`, oldest first."""
        return self.filter(account=account, requested_at__lt=before).order_by("requested_at", "id")


class MutationEntry(models.Model):
    """One change MailFathom made to a mail server or to the stored copy, by one act."""

    kind = models.CharField(max_length=32, choices=MutationKind.choices)
    requester = models.CharField(max_length=200, help_text=_("User name, API token name or task name."))
    requester_kind = models.CharField(max_length=16, choices=RequesterKind.choices)
    # SET_NULL and the identifier as text: the record outlives the account whose mail it deleted.
    account = models.ForeignKey(
        MailAccount, on_delete=models.SET_NULL, null=True, blank=True, related_name="mutations"
    )
    account_identifier = models.CharField(_("account identifier"), max_length=64)
    # The email as plain values, never a foreign key: the act recorded may be its deletion.
    message_id_hash = models.CharField(_("Message-ID hash (SHA-256)"), max_length=64, blank=True, default="")
    folder_alias = models.CharField(max_length=200, blank=True, default="")
    uid = models.BigIntegerField("UID", null=True, blank=True)
    requested_at = models.DateTimeField()
    completed_at = models.DateTimeField(null=True, blank=True)
    outcome = models.CharField(max_length=16, choices=MutationOutcome.choices)
    failure_code = models.PositiveIntegerField(null=True, blank=True)
    counts = models.JSONField(default=dict, blank=True, help_text=_("Counts only, by name."))
    # The account's window when the entry was written: what retention applies once the
    # account row is gone and no window can be read from it.
    retention_days = models.PositiveIntegerField()

    objects = MutationEntryQuerySet.as_manager()

    class Meta:
        verbose_name = _("mutation entry")
        verbose_name_plural = _("mutation trail")
        ordering = ["-requested_at", "-id"]
        indexes = [models.Index(fields=["account", "requested_at"], name="mutation_entry_retention")]

    def __str__(self) -> str:
        return f"{self.kind} on {self.account_identifier}"


# Labels Django derived from the field names, the same words made translatable without a
# migration (mailfathom.core.labels says why); and the plural of a name declared without
# one, which Django would build by appending an "s" to the translated singular.
label_model(AnsweringRunEmail, _("retrieved email"), _("retrieved emails"))
label_fields(
    AnsweringRunEntry,
    run_id=_("run id"),
    account=_("account"),
    instruction_version=_("instruction version"),
    started_at=_("started at"),
    ended_at=_("ended at"),
    outcome=_("outcome"),
    retrieval_ceiling_reached=_("retrieval ceiling reached"),
)
label_fields(AnsweringRunEmail, position=_("position"), cited=_("cited"))
label_fields(
    MutationEntry,
    id=_("ID"),
    kind=_("kind"),
    requester=_("requester"),
    requester_kind=_("requester kind"),
    account=_("account"),
    folder_alias=_("folder alias"),
    requested_at=_("requested at"),
    completed_at=_("completed at"),
    outcome=_("outcome"),
    failure_code=_("failure code"),
    counts=_("counts"),
    retention_days=_("retention days"),
)

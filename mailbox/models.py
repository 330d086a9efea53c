"""The local mailbox copy: per-folder synchronization state, emails, participants, raw MIME.

Listing never loads raw MIME (it lives in RawMessage, compressed); the plain-text body is
derived once at synchronization time for indexing; sanitized HTML and attachment bytes
are derived on read from the raw MIME.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import TYPE_CHECKING, cast

from django.contrib.postgres.fields import ArrayField
from django.contrib.postgres.indexes import GinIndex
from django.contrib.postgres.search import SearchVectorField
from django.db import models
from django.db.models.functions import Coalesce, Greatest, Lower
from django.utils.translation import gettext_lazy as _
from pgvector.django import VectorField

from accounts.models import FolderMapping, MailAccount
from mailbox.attachment_text_models import (  # attachment text's models, re-exported
    AttachmentExtraction as AttachmentExtraction,
)
from mailbox.attachment_text_models import AttachmentOutcome as AttachmentOutcome
from mailbox.attachment_text_models import AttachmentText as AttachmentText
from mailbox.ids import uuid7
from mailbox.lexical import indexed_length, lexical_document
from mailfathom.core.labels import label_fields, label_model

if TYPE_CHECKING:
    from collections.abc import Iterable

    from accounts.services.scope import ResolvedScope
    from mailbox.services.selection import Selection

# Imported messages have no IMAP identity: they take UIDVALIDITY 0 (a value no IMAP server
# issues) and a UID derived from their content, so importing an archive twice adds nothing
# and a UIDVALIDITY change on the server never removes them.
IMPORTED_UIDVALIDITY = 0


class FolderQuerySet(models.QuerySet["Folder"]):
    def record_progress(self, at: datetime, **progress: object) -> int:
        """Mark these folders as having committed progress at `at`, with `progress` (UIDs,
        MODSEQ) written in the same UPDATE; return how many rows were written.

        Committed progress is what proves a folder healthy again, so its failure record goes
        with it: the failure code, the count of consecutive failures, when they began and the
        backoff. The time of the last failure stays, as history.
        """
        return self.update(
            last_committed_at=at,
            last_failure_code=None,
            consecutive_failures=0,
            failing_since=None,
            backoff_until=None,
            **progress,
        )

    def abandoned(self, now: datetime) -> FolderQuerySet:
        """Folders whose run still holds a lease that has expired: it stopped without finishing.

        A run releases its lease however it ends (a failure included), so an expired lease
        still held means the worker died or lost the database mid-run. Read from the
        partial index on held leases.
        """
        return self.filter(lease_token__isnull=False, lease_expires_at__lt=now)

    def record_interrupted(self, now: datetime, lease_seconds: int) -> int:
        """Record each abandoned run of these folders as interrupted, once; return how many.

        Kept: when the run was last seen (its last lease renewal, or its last commit if
        later), what it had stored and the server's count it was working towards. The lease
        itself is left as it is: a run that was only slow may still renew it, and a new run
        takes it over as before.
        """
        last_renewed = models.ExpressionWrapper(
            models.F("lease_expires_at") - timedelta(seconds=lease_seconds),
            output_field=models.DateTimeField(),
        )
        return (
            self.abandoned(now)
            .filter(
                models.Q(interrupted_lease__isnull=True)
                | ~models.Q(interrupted_lease=models.F("lease_token"))
            )
            .update(
                interrupted_lease=models.F("lease_token"),
                interrupted_at=Greatest(last_renewed, models.F("last_committed_at")),
                interrupted_stored=models.F("run_stored"),
                interrupted_server=models.F("server_message_count"),
            )
        )


class Folder(models.Model):
    """Synchronization state of one remote folder of one account."""

    account = models.ForeignKey(MailAccount, on_delete=models.CASCADE, related_name="synced_folders")
    mapping = models.OneToOneField(
        FolderMapping, on_delete=models.SET_NULL, null=True, blank=True, related_name="sync_state"
    )
    remote_name = models.CharField(max_length=1000)
    uidvalidity = models.BigIntegerField(null=True, blank=True)
    highest_uid = models.BigIntegerField(default=0, help_text=_("Highest UID whose batch is committed."))
    highest_modseq = models.BigIntegerField(null=True, blank=True)
    last_committed_at = models.DateTimeField(
        null=True, blank=True, help_text=_("When synchronization last committed progress; empty: never.")
    )
    last_failure_code = models.PositiveIntegerField(null=True, blank=True)
    last_failure_at = models.DateTimeField(null=True, blank=True)
    consecutive_failures = models.PositiveIntegerField(default=0)
    # The first failure since the folder last committed progress (a pause is not a failure):
    # how long synchronization has been failing, which notifications compare to their threshold.
    failing_since = models.DateTimeField(null=True, blank=True)
    backoff_until = models.DateTimeField(null=True, blank=True)
    lease_token = models.UUIDField(null=True, blank=True)
    lease_expires_at = models.DateTimeField(null=True, blank=True)
    # What the status page reads about the latest run (mailbox.services.sync_status): the
    # server's count when the folder was last opened, when that run began, and how many
    # messages it has stored so far (advanced with each committed batch).
    server_message_count = models.PositiveIntegerField(
        null=True, blank=True, help_text=_("Messages the server reported (EXISTS) when last opened.")
    )
    run_started_at = models.DateTimeField(null=True, blank=True)
    run_stored = models.PositiveIntegerField(default=0)
    # The latest run found holding an expired lease (FolderQuerySet.record_interrupted): its
    # lease token, when it was last seen, what it had stored and the server's count then.
    interrupted_lease = models.UUIDField(null=True, blank=True)
    interrupted_at = models.DateTimeField(null=True, blank=True)
    interrupted_stored = models.PositiveIntegerField(default=0)
    interrupted_server = models.PositiveIntegerField(null=True, blank=True)

    objects = FolderQuerySet.as_manager()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["account", "remote_name"], name="folder_remote_unique"),
        ]
        indexes = [
            # The scheduler's pass looks for abandoned runs every minute (FolderQuerySet.abandoned).
            models.Index(
                fields=["lease_expires_at"],
                condition=models.Q(lease_token__isnull=False),
                name="folder_lease_held",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.account_id}:{self.remote_name}"

    @property
    def interruption_pending(self) -> bool:
        """An interrupted run was recorded and nothing has happened on the folder since.

        A later commit (the resumed run's progress) or a later failure supersedes it.
        """
        at = self.interrupted_at
        if at is None:
            return False
        return (self.last_committed_at is None or self.last_committed_at <= at) and (
            self.last_failure_at is None or self.last_failure_at <= at
        )


class Availability(models.TextChoices):
    AVAILABLE = "available", _("Available")
    EXCEEDED_SIZE_LIMIT = "exceededSizeLimit", _("Exceeded the size limit")
    AWAITING_STORAGE_HEADROOM = "awaitingStorageHeadroom", _("Awaiting storage headroom")
    ENCRYPTED = "encryptedNotReadableLocally", _("Encrypted, not readable locally")


class Direction(models.TextChoices):
    INCOMING = "incoming", _("Incoming")
    OUTGOING = "outgoing", _("Outgoing")


def thread_keys_expression() -> models.Func:
    """array_remove(references || message_id || in_reply_to, ''): immutable, so it can be generated."""
    keys = ArrayField(models.CharField(max_length=998))
    appended = models.Func(models.F("references"), models.F("message_id"), function="array_append")
    appended = models.Func(appended, models.F("in_reply_to"), function="array_append")
    return models.Func(appended, models.Value(""), function="array_remove", output_field=keys)


def mail_date() -> Coalesce:
    """An email's own date: its Date header (sent_at), else when its server received it.

    What the status page charts mail by; the index email_mail_date holds the same
    expression, so a range of it is read from the index.
    """
    return Coalesce("sent_at", "received_at")


class EmailQuerySet(models.QuerySet["Email"]):
    def dated_between(self, start: datetime, end: datetime) -> EmailQuerySet:
        """Emails whose own date (mail_date) is at or after `start` and before `end`."""
        return self.alias(mail_date=mail_date()).filter(mail_date__gte=start, mail_date__lt=end)

    def received_between(self, on_or_after: datetime | None, before: datetime | None) -> EmailQuerySet:
        """Emails received at or after `on_or_after` and before `before`; None leaves that side open."""
        rows = self
        if on_or_after:
            rows = rows.filter(received_at__gte=on_or_after)
        if before:
            rows = rows.filter(received_at__lt=before)
        return rows

    def involving(self, addresses: Iterable[str]) -> EmailQuerySet:
        """Emails sent by, or naming as any participant, one of `addresses` in any case.

        Both case-foldings of each address are tried, so Python's lower() and PostgreSQL's
        lower() agree on what matches.
        """
        addresses = list(addresses)
        as_participant = Participant.objects.naming(addresses).filter(email=models.OuterRef("pk"))
        return self.annotate(sender_folded=Lower("sender_address")).filter(
            models.Q(sender_folded__in=address_forms(addresses)) | models.Exists(as_participant)
        )

    def readable(
        self, scope: ResolvedScope, folder_mapping_ids: Iterable[int] | None = None
    ) -> EmailQuerySet:
        """Emails a scope may see: its served accounts, in the folders visible to tools.

        `folder_mapping_ids` narrows to some of the scope's folders (a selection leaves junk
        out); absent, every folder the scope resolved, junk included. Reads are keyed on the
        folder mappings the scope resolved, so a folder whose mapping was removed or hidden,
        or an account no longer served, reads as empty.
        """
        return self.filter(
            account_id__in=[account.account_pk for account in scope.accounts],
            folder__mapping_id__in=list(
                scope.folder_mapping_ids if folder_mapping_ids is None else folder_mapping_ids
            ),
            account__served=True,
        )

    def in_selection(self, selection: Selection) -> EmailQuerySet:
        """Emails a selection may read: what its scope may see, every filter applied."""
        rows = self.readable(selection.scope, selection.folder_mapping_ids)
        f = selection.filter
        if f.sender_address:
            rows = rows.filter(sender_address__iexact=f.sender_address)
        if f.recipient_address:
            rows = rows.filter(
                models.Exists(
                    Participant.objects.filter(
                        email=models.OuterRef("pk"),
                        role__in=("to", "cc"),
                        address__iexact=f.recipient_address,
                    )
                )
            )
        if f.subject_fragment:
            rows = rows.filter(subject__icontains=f.subject_fragment)
        rows = rows.received_between(f.received_on_or_after, f.received_before)
        if f.is_remotely_seen is not None:
            seen = models.Q(flags__contains=["\\Seen"])
            rows = rows.filter(seen if f.is_remotely_seen else ~seen)
        if f.has_attachments is not None:
            rows = (
                rows.filter(attachment_count__gt=0)
                if f.has_attachments
                else rows.exclude(attachment_count__gt=0)
            )
        return rows


_EmailManagerBase = models.Manager.from_queryset(EmailQuerySet)


class EmailManager(_EmailManagerBase["Email"]):
    """Every email query leaves attachment_text out unless it names it.

    The column holds up to 2,000,000 characters per email (mailbox.services.attachment_text);
    listing, searching and summarizing never need it, and reading it whole for every row of a
    page would move megabytes per call. A row that does read it loads it on first access; a
    row copied by clearing its pk and saving must be read with .defer(None) first.
    """

    def get_queryset(self) -> EmailQuerySet:
        # defer() keeps the queryset's class; django-stubs types it as the plain QuerySet.
        return cast(EmailQuerySet, super().get_queryset().defer("attachment_text"))


class Email(models.Model):
    id = models.UUIDField(primary_key=True, default=uuid7, editable=False)
    account = models.ForeignKey(MailAccount, on_delete=models.CASCADE, related_name="emails")
    folder = models.ForeignKey(Folder, on_delete=models.CASCADE, related_name="emails")
    uidvalidity = models.BigIntegerField()
    uid = models.BigIntegerField()

    message_id = models.CharField(max_length=998, blank=True, default="")
    in_reply_to = models.CharField(max_length=998, blank=True, default="")
    references = ArrayField(models.CharField(max_length=998), default=list, blank=True)
    subject = models.TextField(blank=True, default="")
    sent_at = models.DateTimeField(null=True, blank=True)
    received_at = models.DateTimeField(help_text=_("INTERNALDATE: when the server received it."))
    sender_address = models.CharField(max_length=320, blank=True, default="")
    sender_name = models.CharField(max_length=998, blank=True, default="")
    size_bytes = models.BigIntegerField(help_text=_("RFC822.SIZE as the server reported it."))

    flags = ArrayField(models.CharField(max_length=256), default=list, blank=True)
    flags_observed = models.BooleanField(default=False)
    flags_observed_at = models.DateTimeField(null=True, blank=True)

    direction = models.CharField(max_length=8, choices=Direction.choices, default=Direction.INCOMING)
    is_bulk = models.BooleanField(default=False)
    # Came through a mailing list (List-Id, Precedence: list), as its sender claims. Drafting's
    # thread_hijack leaves such posts out of a conversation: a list thread is open to members.
    is_list_mail = models.BooleanField(default=False)
    # The conversation this email belongs to, across the account's folders (Sent included):
    # the id of one of its emails, set at storing time (mailbox.services.threads). Empty only
    # for mail stored before threading existed, until `manage.py thread_mail` has run.
    thread_id = models.UUIDField(null=True, blank=True)
    # Every id the message names (its own, In-Reply-To, References), without empties: two
    # emails sharing any of them are in one thread, even through an id no stored email has.
    thread_keys = models.GeneratedField(
        expression=thread_keys_expression(),
        output_field=ArrayField(models.CharField(max_length=998)),
        db_persist=True,
    )

    # Null while nothing has read the parts (content kept out by the size limit or headroom).
    attachment_count = models.PositiveIntegerField(null=True, blank=True)
    inline_count = models.PositiveIntegerField(null=True, blank=True)
    attachment_total_bytes = models.BigIntegerField(null=True, blank=True)
    encrypted = models.BooleanField(default=False)
    unverified_signature = models.BooleanField(default=False)
    unexpanded_tnef = models.BooleanField(default=False)

    availability = models.CharField(
        max_length=32, choices=Availability.choices, default=Availability.AVAILABLE
    )
    parse_defects = ArrayField(models.CharField(max_length=64), default=list, blank=True)
    text_body = models.TextField(blank=True, default="")
    embedded = models.BooleanField(default=False, help_text=_("Whether the active profile has its passages."))
    # Sender and recipient names and addresses, space-joined at storing time, so the lexical
    # index can be a generated column of this one row.
    participants_text = models.TextField(blank=True, default="")
    # The text extracted from the attachments, in attachment order, written by the
    # attachment text pass (mailbox.services.attachment_text); each AttachmentText row says
    # where its part starts. Held here, once, so the lexical index stays one generated column.
    attachment_text = models.TextField(blank=True, default="")
    search_vector = models.GeneratedField(
        expression=lexical_document(),
        output_field=SearchVectorField(),
        db_persist=True,
    )
    # Characters the index read (subject, participants, body up to its bound): BM25's
    # document length, compared with LexicalCollectionStat.average_length.
    search_length = models.GeneratedField(
        expression=indexed_length(), output_field=models.IntegerField(), db_persist=True
    )
    synced_at = models.DateTimeField(auto_now_add=True)

    objects = EmailManager()

    class Meta:
        # Viewing an email's row shows metadata only; its subject, addresses and body are
        # mail content, read in admin only with this permission (docs/operations/admin-emails.md).
        permissions = [("view_mail_content", "Can view mail content (subject, addresses, body)")]
        constraints = [
            models.UniqueConstraint(
                fields=["account", "folder", "uidvalidity", "uid"], name="email_remote_identity_unique"
            ),
        ]
        indexes = [
            GinIndex(fields=["search_vector"], name="email_search_vector"),
            models.Index(fields=["folder", "-received_at", "-id"], name="email_folder_timeline"),
            models.Index(fields=["account", "message_id"], name="email_message_id"),
            # The status page's count of mail stored today reads a range of this.
            models.Index(fields=["synced_at"], name="email_synced_at"),
            # Its chart of mail per day, by each email's own date, reads a range of this.
            models.Index(mail_date(), name="email_mail_date"),
            # What embedding coverage leaves out, counted without a scan of every email.
            models.Index(
                fields=["folder"],
                name="email_content_unavailable",
                condition=~models.Q(availability=Availability.AVAILABLE),
            ),
            # Looked up by every batch stored: no pending list, so a lookup never scans one.
            GinIndex(fields=["thread_keys"], name="email_thread_keys", fastupdate=False),
            models.Index(fields=["account", "thread_id", "received_at"], name="email_thread"),
            # The drafting gate's window scan, oldest first (answering.drafting.gate): only
            # incoming mail that is not bulk can ever wait for a draft.
            models.Index(
                fields=["account", "received_at", "id"],
                name="email_awaiting_draft",
                condition=models.Q(direction=Direction.INCOMING, is_bulk=False),
            ),
            # The embedding sweep's queue, newest first: stays as small as the backlog.
            models.Index(
                fields=["-received_at", "-id"],
                name="email_pending_embedding",
                condition=models.Q(embedded=False, availability=Availability.AVAILABLE),
            ),
        ]

    def __str__(self) -> str:
        return str(self.id)


class ParticipantRole(models.TextChoices):
    TO = "to", "To"
    CC = "cc", "Cc"
    BCC = "bcc", "Bcc"
    REPLY_TO = "reply_to", "Reply-To"


def address_forms(addresses: Iterable[str]) -> list[str]:
    """Each address as given and lower-cased: matched against PostgreSQL's lower() of a
    stored address, both forms make Python's and PostgreSQL's case-folding agree."""
    return sorted({form for address in addresses for form in (address, address.lower())})


class ParticipantQuerySet(models.QuerySet["Participant"]):
    def naming(self, addresses: Iterable[str]) -> ParticipantQuerySet:
        """Participants whose address is one of `addresses` in any case (stored addresses
        keep their local part's case); the participant_address_folded index serves it."""
        return self.alias(folded=Lower("address")).filter(folded__in=address_forms(addresses))


class Participant(models.Model):
    email = models.ForeignKey(Email, on_delete=models.CASCADE, related_name="participants")
    role = models.CharField(max_length=8, choices=ParticipantRole.choices)
    position = models.PositiveIntegerField()
    address = models.CharField(max_length=320, blank=True, default="")
    display_name = models.CharField(max_length=998, blank=True, default="")

    objects = ParticipantQuerySet.as_manager()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["email", "role", "position"], name="participant_position_unique"),
        ]
        indexes = [
            models.Index(fields=["address"], name="participant_address"),
            # ParticipantQuerySet.naming: an address in any case (search's author, erasure, holds).
            models.Index(Lower("address"), name="participant_address_folded"),
        ]

    def __str__(self) -> str:
        return f"{self.role}:{self.position}"


class RawMessage(models.Model):
    """The message as the server sent it, zlib-compressed, in a table of its own."""

    email = models.OneToOneField(Email, on_delete=models.CASCADE, primary_key=True, related_name="raw")
    compressed = models.BinaryField()
    sha256 = models.CharField(max_length=64, help_text="Of the uncompressed bytes.")
    original_size = models.BigIntegerField()
    stored_size = models.BigIntegerField(help_text="Compressed bytes: what counts against the ceiling.")

    def __str__(self) -> str:
        return str(self.email_id)


class RepairRequest(models.Model):
    """Stored content a read found missing or damaged; the next synchronization run refetches it."""

    email = models.OneToOneField(Email, on_delete=models.CASCADE, related_name="repair_request")
    requested_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return str(self.email_id)


class EmbeddingProfile(models.Model):
    """Which provider, model and dimension the stored vectors were made with; one is active.

    Vectors from two models live in different spaces, so a query is compared only with
    passages of the active profile, and a configured model that differs from it makes
    semantic search degraded rather than silently wrong.
    """

    provider = models.CharField(max_length=32)
    model = models.CharField(max_length=200)
    dimensions = models.PositiveIntegerField()
    active = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["provider", "model", "dimensions"], name="embedding_profile_unique"
            ),
            models.UniqueConstraint(
                fields=["active"], condition=models.Q(active=True), name="one_active_profile"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.provider}:{self.model}:{self.dimensions}"


class Passage(models.Model):
    """A bounded window of one email's text (subject first), embedded under one profile."""

    email = models.ForeignKey(Email, on_delete=models.CASCADE, related_name="passages")
    profile = models.ForeignKey(EmbeddingProfile, on_delete=models.CASCADE, related_name="passages")
    position = models.PositiveSmallIntegerField()
    characters = models.PositiveIntegerField(help_text="Length of the text embedded (not stored).")
    embedding = VectorField(dimensions=None)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["email", "profile", "position"], name="passage_position_unique"),
        ]

    def __str__(self) -> str:
        return f"{self.email_id}:{self.position}"


class EmbeddingSpend(models.Model):
    """Characters and calls spent embedding per period, durable across worker restarts."""

    period_start = models.DateTimeField(unique=True)
    characters = models.BigIntegerField(default=0)
    calls = models.PositiveIntegerField(default=0)

    def __str__(self) -> str:
        return self.period_start.isoformat()


class CoverageSample(models.Model):
    """The count of stored and of embedded emails at one instant, taken every few minutes.

    The status page draws embedding coverage over time from these and measures the rate the
    backlog shrinks at (mailbox.services.sync_status). Counts only, never content.
    """

    taken_at = models.DateTimeField(unique=True)
    emails = models.PositiveIntegerField()
    embeddable = models.PositiveIntegerField(help_text="Emails whose content is available to embed.")
    embedded = models.PositiveIntegerField()

    def __str__(self) -> str:
        return self.taken_at.isoformat()


class LexicalTermStat(models.Model):
    """How many emails hold each indexed word: the inverse document frequency of ranking.

    A snapshot from ts_stat, refreshed periodically (mailbox.tasks.refresh_term_stats): a
    ranking only needs the proportions, which move slowly as mail arrives.
    """

    word = models.TextField(primary_key=True)
    documents = models.PositiveIntegerField()
    # The word's stems (empty for a stop word): a query word stands for every word that
    # shares one of its stems (mailbox.lexical).
    english = models.TextField(blank=True, default="")
    german = models.TextField(blank=True, default="")

    class Meta:
        indexes = [
            models.Index(fields=["english"], name="term_stat_english"),
            models.Index(fields=["german"], name="term_stat_german"),
        ]

    def __str__(self) -> str:
        return self.word


class LexicalCollectionStat(models.Model):
    """The collection's figures of the same snapshot: one row, replaced with the word counts."""

    emails = models.PositiveIntegerField()
    average_length = models.FloatField(help_text="Mean Email.search_length, in characters.")
    refreshed_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return f"{self.emails} emails"


class Suppression(models.Model):
    """A message erased on request, which synchronization and import must never store again.

    It holds no content: the remote identity (folder, UIDVALIDITY, UID) stops the same copy,
    and a keyed hash of the Message-ID (mailbox.services.suppression) stops copies of the same
    message under another UID of the account (moved, copied, a UIDVALIDITY reset, a
    re-import) and, when deployment-wide, in any other account. A new message from the same
    person is a new act of mail and is stored (docs/operations/erasure.md).
    """

    account = models.ForeignKey(MailAccount, on_delete=models.CASCADE, related_name="suppressions")
    # A folder that goes away takes its UIDs' meaning with it; the Message-ID hash stays.
    folder = models.ForeignKey(
        Folder, on_delete=models.SET_NULL, null=True, blank=True, related_name="suppressions"
    )
    uidvalidity = models.BigIntegerField()
    uid = models.BigIntegerField()
    message_id_hash = models.CharField(max_length=64, blank=True, default="")
    # True: the Message-ID hash keeps the message out of every account of the deployment, not
    # only this one (the erasure's default; a request may ask for its own accounts only).
    deployment_wide = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        indexes = [
            models.Index(fields=["folder", "uidvalidity", "uid"], name="suppression_remote"),
            models.Index(
                fields=["account", "message_id_hash"],
                name="suppression_message_id",
                condition=~models.Q(message_id_hash=""),
            ),
            models.Index(
                fields=["message_id_hash"],
                name="suppression_deployment",
                condition=~models.Q(message_id_hash="") & models.Q(deployment_wide=True),
            ),
        ]

    def __str__(self) -> str:
        return f"{self.account_id}:{self.uidvalidity}:{self.uid}"


class DownloadDay(models.Model):
    """Message bytes synchronization downloaded for one account on one UTC day.

    What an account's download pace (MailAccount.download_bytes_per_day) is measured
    against; mailbox.sync.pace adds to it with one UPDATE per batch.
    """

    account = models.ForeignKey(
        "accounts.MailAccount", on_delete=models.CASCADE, related_name="download_days"
    )
    day = models.DateField()
    downloaded_bytes = models.PositiveBigIntegerField(default=0)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["account", "day"], name="download_day_unique")]

    def __str__(self) -> str:
        return f"{self.day}: {self.downloaded_bytes} bytes"


# Labels Django derived from the field and model names, the same words made translatable
# without a migration (mailfathom.core.labels says why).
label_model(Folder, _("folder"), _("folders"))
label_model(Email, _("email"), _("emails"))
label_fields(
    Folder,
    account=_("account"),
    mapping=_("mapping"),
    remote_name=_("remote name"),
    uidvalidity=_("uidvalidity"),
    highest_uid=_("highest uid"),
    highest_modseq=_("highest modseq"),
    last_committed_at=_("last committed at"),
    last_failure_code=_("last failure code"),
    last_failure_at=_("last failure at"),
    consecutive_failures=_("consecutive failures"),
    backoff_until=_("backoff until"),
    lease_expires_at=_("lease expires at"),
    interrupted_at=_("interrupted at"),
    interrupted_stored=_("interrupted stored"),
    interrupted_server=_("interrupted server"),
)
label_fields(
    Email,
    account=_("account"),
    message_id=_("message id"),
    subject=_("subject"),
    sent_at=_("sent at"),
    received_at=_("received at"),
    size_bytes=_("size bytes"),
    flags=_("flags"),
    flags_observed_at=_("flags observed at"),
    direction=_("direction"),
    is_bulk=_("is bulk"),
    attachment_count=_("attachment count"),
    inline_count=_("inline count"),
    attachment_total_bytes=_("attachment total bytes"),
    encrypted=_("encrypted"),
    unverified_signature=_("unverified signature"),
    availability=_("availability"),
    synced_at=_("synced at"),
)

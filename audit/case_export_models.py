"""The record of a case export: who asked for which mail, how far it got, and what it wrote.

The record stays after its file expires: it is the lasting account of what mail left the
product through compliance staff (docs/operations/compliance.md, Case exports). Addresses
of a person selection are kept as keyed hashes only (HMAC-SHA256 under the "case-export"
purpose key), for the reason erasure requests keep theirs that way: a table of the people
whose mail was exported is itself sensitive. The addresses travel to the worker in the task
message and are written in clear only into the manifest inside the zip, beside their mail.
"""

from __future__ import annotations

import uuid

from django.db import models
from django.utils.translation import gettext_lazy as _

from mailfathom.core.labels import label_fields, label_model

EXPORT_PERMISSION = "audit.export_case"


class CaseExportStatus(models.TextChoices):
    QUEUED = "queued", _("Queued")
    RUNNING = "running", _("Running")
    DONE = "done", _("Done")
    FAILED = "failed", _("Failed")
    REFUSED = "refused", _("Refused")
    EXPIRED = "expired", _("Expired (file deleted)")


class CaseExport(models.Model):
    """One case export, from the form that started it to its file's expiry."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    requested_by = models.CharField(max_length=200, help_text=_("User name of the compliance staff member."))
    requested_at = models.DateTimeField()
    case_reference = models.CharField(max_length=200, blank=True, default="")
    # The selection as given, addresses replaced by their keyed hashes (see module docstring).
    selection = models.JSONField(default=dict)
    status = models.CharField(
        max_length=16, choices=CaseExportStatus.choices, default=CaseExportStatus.QUEUED
    )
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    failure_code = models.PositiveIntegerField(null=True, blank=True)
    # Progress, updated by the worker as it goes: messages handled out of those selected.
    total_messages = models.PositiveIntegerField(default=0)
    done_messages = models.PositiveIntegerField(default=0)
    # When the worker last wrote progress: a running export silent for long is taken over.
    progress_at = models.DateTimeField(null=True, blank=True)
    exported_messages = models.PositiveIntegerField(default=0)
    missing_messages = models.PositiveIntegerField(default=0)
    selected_bytes = models.BigIntegerField(default=0, help_text=_("Stored raw bytes the selection holds."))
    file_bytes = models.BigIntegerField(default=0, help_text=_("Size of the zip file."))
    manifest_sha256 = models.CharField(max_length=64, blank=True, default="")
    file_sha256 = models.CharField(_("zip SHA-256"), max_length=64, blank=True, default="")
    # The zip's name inside the case export folder (never a path a caller wrote).
    file_name = models.CharField(max_length=200, blank=True, default="")
    expires_at = models.DateTimeField(null=True, blank=True)
    file_deleted_at = models.DateTimeField(null=True, blank=True)
    downloads = models.PositiveIntegerField(default=0)
    last_downloaded_at = models.DateTimeField(null=True, blank=True)
    last_downloaded_by = models.CharField(max_length=200, blank=True, default="")

    class Meta:
        app_label = "audit"
        verbose_name = _("case export")
        ordering = ["-requested_at"]
        permissions = [("export_case", "Can run and download case exports")]

    def __str__(self) -> str:
        return f"case export {self.id}"

    @property
    def percent(self) -> int:
        if self.status == CaseExportStatus.DONE:
            return 100
        if not self.total_messages:
            return 0
        return min(100, (100 * self.done_messages) // self.total_messages)


# Labels Django derived from the field names, the same words made translatable without a
# migration (mailfathom.core.labels says why); and the plural, which Django would build by
# appending an "s" to the translated singular.
label_model(CaseExport, _("case export"), _("case exports"))
label_fields(
    CaseExport,
    id=_("id"),
    requested_by=_("requested by"),
    requested_at=_("requested at"),
    case_reference=_("case reference"),
    selection=_("selection"),
    status=_("status"),
    started_at=_("started at"),
    finished_at=_("finished at"),
    failure_code=_("failure code"),
    total_messages=_("total messages"),
    done_messages=_("done messages"),
    exported_messages=_("exported messages"),
    missing_messages=_("missing messages"),
    selected_bytes=_("selected bytes"),
    file_bytes=_("file bytes"),
    manifest_sha256=_("manifest sha256"),
    expires_at=_("expires at"),
    file_deleted_at=_("file deleted at"),
    downloads=_("downloads"),
    last_downloaded_at=_("last downloaded at"),
    last_downloaded_by=_("last downloaded by"),
)

"""Text extracted from attachments: one row per attachment, and one per email once it is done.

The text itself is kept once, in Email.attachment_text (what the lexical index reads); a row
records an attachment's outcome and where its text lies there.

Re-exported by mailbox.models. Both rows go with their email (erasure and retention delete
emails, and these with them).
"""

from __future__ import annotations

from django.db import models


class AttachmentOutcome(models.TextChoices):
    OK = "ok", "Text extracted"
    TOO_LARGE = "too_large", "Too large"
    ENCRYPTED = "encrypted", "Encrypted"
    UNREADABLE = "unreadable", "Unreadable"
    TIMED_OUT = "timed_out", "Timed out"
    UNSUPPORTED = "unsupported", "Not a kind that is read"


class AttachmentText(models.Model):
    """What extraction made of one attachment of one email: its outcome and, if ok, its text."""

    email = models.ForeignKey("mailbox.Email", on_delete=models.CASCADE, related_name="attachment_texts")
    # The attachment's MIME part index (AttachmentInfo.part_index): finds its bytes again.
    part_index = models.PositiveIntegerField()
    file_name = models.CharField(max_length=255, blank=True, default="")
    media_type = models.CharField(max_length=255, blank=True, default="")
    outcome = models.CharField(max_length=16, choices=AttachmentOutcome.choices)
    detail = models.CharField(max_length=64, blank=True, default="", help_text="Why, as a short code.")
    truncated = models.BooleanField(default=False, help_text="The output bound cut the text.")
    # Where this attachment's text lies in Email.attachment_text: [offset, offset + characters).
    offset = models.PositiveIntegerField(default=0)
    characters = models.PositiveIntegerField(default=0)
    extracted_at = models.DateTimeField()
    engine_version = models.PositiveSmallIntegerField()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["email", "part_index"], name="attachment_text_part_unique"),
        ]

    def __str__(self) -> str:
        return f"{self.email_id}:{self.part_index}"

    def text_in(self, joined: str) -> str:
        """This attachment's text, cut from its email's attachment_text."""
        return joined[self.offset : self.offset + self.characters]


class AttachmentExtraction(models.Model):
    """An email whose attachments have been through extraction under one engine version.

    The pass's queue is the mail with attachments that has no such row for the current
    version, so an email none of whose attachments gave a row is not taken up again.
    """

    email = models.OneToOneField(
        "mailbox.Email", on_delete=models.CASCADE, primary_key=True, related_name="attachment_extraction"
    )
    engine_version = models.PositiveSmallIntegerField()
    extracted_at = models.DateTimeField()
    attachments = models.PositiveIntegerField(default=0)
    characters = models.PositiveIntegerField(default=0)

    def __str__(self) -> str:
        return str(self.email_id)

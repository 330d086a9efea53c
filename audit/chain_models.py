"""The hash chain over the audit trails: one append-only table of links, one head row per trail.

The trails themselves carry no hash column: each trail model stays as it is, and a link
names its entry by primary key (as text). See audit/services/chain.py for how links are
written and checked, and docs/decisions/0012-tamper-evident-trails.md for why.
"""

from __future__ import annotations

from django.db import models


class LinkKind(models.TextChoices):
    # The entry's canonical content at this moment (written when the entry is, and again
    # whenever the application changes it).
    STATE = "state", "Entry state"
    # The application deleted the entry (retention, or the mail or account it follows).
    REMOVED = "removed", "Entry removed"
    # Retention pruned every link up to `covers_seq`; `covers_hash` is the chain hash there.
    CHECKPOINT = "checkpoint", "Checkpoint"


class TrailLink(models.Model):
    """One link of one trail's chain: chain_hash = HMAC(key, previous chain hash || this link)."""

    trail = models.CharField(max_length=32)
    seq = models.BigIntegerField(help_text="1 for the trail's first link; no gaps.")
    kind = models.CharField(max_length=16, choices=LinkKind.choices)
    entry_pk = models.CharField("entry primary key", max_length=64, blank=True, default="")
    content_hash = models.CharField(
        max_length=64, blank=True, default="", help_text="SHA-256 of the entry's canonical content (state)."
    )
    note = models.CharField(max_length=32, blank=True, default="", help_text="Why (removed, state).")
    covers_seq = models.BigIntegerField(null=True, blank=True, help_text="Checkpoint: links pruned up to.")
    covers_hash = models.CharField(max_length=64, blank=True, default="")
    chain_hash = models.CharField(max_length=64)
    key_id = models.CharField(max_length=16)
    created_at = models.DateTimeField()

    class Meta:
        app_label = "audit"
        verbose_name = "trail link"
        ordering = ["trail", "seq"]
        constraints = [models.UniqueConstraint(fields=["trail", "seq"], name="trail_link_one_per_seq")]
        indexes = [models.Index(fields=["trail", "entry_pk", "seq"], name="trail_link_entry")]

    def __str__(self) -> str:
        return f"{self.trail} #{self.seq}"


class TrailHead(models.Model):
    """The last link of a trail; its row is locked by every append, so a chain never forks."""

    trail = models.CharField(max_length=32, primary_key=True)
    seq = models.BigIntegerField(default=0)
    chain_hash = models.CharField(max_length=64, blank=True, default="")

    class Meta:
        app_label = "audit"
        verbose_name = "trail head"

    def __str__(self) -> str:
        return f"{self.trail} head #{self.seq}"

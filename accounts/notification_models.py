"""What a person asked to be told about their mail accounts, and what they were last told.

A person chooses the kinds (drafts waiting, synchronization failing, a mailbox to sign in
to again) and the channels (mail to their address, a webhook signed with a secret of its
own); mailfathom.notifications decides what is due and sends it. A NotificationSent row
holds the state a person was last told per account, kind and channel, so the same state is
not told twice and a digest repeats no more often than its interval.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import models
from django.utils.translation import gettext_lazy as _

from accounts import crypto
from mailfathom.core.hosts import is_loopback_host


class NotificationKind(models.TextChoices):
    DRAFTS_WAITING = "drafts_waiting", "Drafts waiting for review"
    SYNC_FAILING = "sync_failing", "Synchronization failing"
    SIGN_IN_NEEDED = "sign_in_needed", "Mailbox needs signing in again"


class NotificationChannel(models.TextChoices):
    MAIL = "mail", "Mail"
    WEBHOOK = "webhook", "Webhook"


def webhook_url_problem(url: str) -> str:
    """Why `url` may not receive notifications, or "" when it may.

    https, or http to a loopback host only; no user name or password in it (the signature
    proves the sender), no fragment.
    """
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
        parts.port  # noqa: B018 (raises ValueError for a port out of range)
    except ValueError:
        return "Give a URL such as https://hooks.example.org/mailfathom."
    if not host or parts.scheme not in {"https", "http"}:
        return "Give a URL such as https://hooks.example.org/mailfathom."
    if parts.scheme == "http" and not is_loopback_host(host):
        return "A webhook must be reached over https (http only on a loopback host)."
    if parts.username is not None or parts.password is not None:
        return "A webhook URL may not carry a user name or password; the signature proves the sender."
    if parts.fragment:
        return "A webhook URL may not carry a fragment (#...)."
    return ""


class NotificationPreference(models.Model):
    """One person's choice of what they are told and how; nothing is sent without one."""

    user = models.OneToOneField(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="notification_preference"
    )
    by_mail = models.BooleanField(
        "by mail",
        default=False,
        help_text="To the email address of your user; only while the operator has set up an SMTP server.",
    )
    webhook_url = models.CharField(
        "webhook URL",
        max_length=500,
        blank=True,
        default="",
        help_text="Receives a signed JSON POST (https, or http on a loopback host). Blank: no webhook.",
    )
    webhook_secret_encrypted = models.TextField(blank=True, default="", editable=False)
    drafts_waiting = models.BooleanField(
        "drafts waiting for review",
        default=True,
        help_text="A digest: how many drafts wait on each account, at most once per digest interval.",
    )
    sync_failing = models.BooleanField(
        "synchronization failing",
        default=True,
        help_text="When an account's synchronization has been failing longer than the operator's threshold.",
    )
    sign_in_needed = models.BooleanField(
        "mailbox needs signing in again",
        default=True,
        help_text="When an account's OAuth sign-in has to be done again (or its registration was refused).",
    )
    every_account = models.BooleanField(
        "every account",
        default=False,
        help_text="Operators only: be told about every account, not only those you hold a role on.",
    )
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["user__username"]
        verbose_name = _("notification preference")
        verbose_name_plural = _("notification preferences")

    def __str__(self) -> str:
        return f"Notifications of {self.user.get_username()}"

    def clean(self) -> None:
        self.webhook_url = self.webhook_url.strip()
        if self.webhook_url and (problem := webhook_url_problem(self.webhook_url)):
            raise ValidationError({"webhook_url": problem})

    def wants(self, kind: str) -> bool:
        return bool(getattr(self, kind))

    def set_webhook_secret(self, plain: str) -> None:
        self.webhook_secret_encrypted = crypto.encrypt(plain) if plain else ""

    def webhook_secret(self) -> str:
        return crypto.decrypt(self.webhook_secret_encrypted) if self.webhook_secret_encrypted else ""

    @property
    def has_webhook_secret(self) -> bool:
        return bool(self.webhook_secret_encrypted)


class NotificationSent(models.Model):
    """The state a person was last told about one account, for one kind, on one channel.

    `state` is what the notification reported, in plain values (a count, a code and a
    time): never mail content.
    """

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    # By name: accounts.models imports this module to register its models.
    account = models.ForeignKey("accounts.MailAccount", on_delete=models.CASCADE, related_name="+")
    kind = models.CharField(max_length=32, choices=NotificationKind.choices)
    channel = models.CharField(max_length=16, choices=NotificationChannel.choices)
    state = models.JSONField(default=dict, blank=True)
    sent_at = models.DateTimeField()

    class Meta:
        verbose_name = _("notification sent")
        verbose_name_plural = _("notifications sent")
        constraints = [
            models.UniqueConstraint(
                fields=["user", "account", "kind", "channel"], name="notification_sent_unique"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.kind} ({self.channel})"

"""Mail accounts an operator configures, and the folders of each that MailFathom copies."""

from __future__ import annotations

import zoneinfo
from typing import Any

from django.conf import settings
from django.contrib.auth.models import Group
from django.core.exceptions import ValidationError
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from django.db.models.functions import Lower
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from accounts import crypto
from accounts.mcp_oauth_models import (  # the MCP authorization server's models, re-exported
    ClientKind as ClientKind,
)
from accounts.mcp_oauth_models import McpAuthorizationCode as McpAuthorizationCode
from accounts.mcp_oauth_models import McpConnection as McpConnection
from accounts.mcp_oauth_models import McpOAuthClient as McpOAuthClient
from accounts.mcp_oauth_models import McpToken as McpToken
from accounts.notification_models import (  # people's notification preferences, re-exported
    NotificationPreference as NotificationPreference,
)
from accounts.notification_models import NotificationSent as NotificationSent
from accounts.signals import drafting_switched_on
from mailfathom.core.hosts import is_loopback_host
from mailfathom.core.labels import label_fields, label_model
from mailfathom.core.text import has_control_character

IDENTIFIER_IMMUTABLE = _("The account identifier cannot be changed once saved.")


class Security(models.TextChoices):
    TLS = "tls", _("Implicit TLS (IMAPS)")
    STARTTLS = "starttls", "STARTTLS"
    NONE = "none", _("None (loopback hosts only)")


# The port each security mode's servers listen on unless told otherwise (RFC 8314, RFC 3501).
DEFAULT_PORTS = {Security.TLS: 993, Security.STARTTLS: 143, Security.NONE: 143}


class SyncMode(models.TextChoices):
    POLLING = "polling", _("Polling")
    PUSH = "push", _("Push (IMAP IDLE)")


class DraftAppendMode(models.TextChoices):
    """Which drafts are written to the account's Drafts folder on the mail server."""

    OFF = "off", _("Never (drafts stay in MailFathom)")
    APPROVED = "approved", _("Approved drafts")
    EVERY = "every", _("Every draft")


class FolderRole(models.TextChoices):
    INBOX = "inbox", _("Inbox")
    SENT = "sent", _("Sent")
    DRAFTS = "drafts", _("Drafts")
    JUNK = "junk", _("Junk")
    ARCHIVE = "archive", _("Archive")
    TRASH = "trash", _("Trash")


class AuthMethod(models.TextChoices):
    PASSWORD = "password", _("Password")
    OAUTH2 = "oauth2", _("OAuth 2.0 (sign in with the provider)")


class SaslMechanism(models.TextChoices):
    """How an OAuth 2.0 access token is presented to the IMAP server."""

    XOAUTH2 = "xoauth2", "XOAUTH2 (Microsoft, Google, Dovecot)"
    OAUTHBEARER = "oauthbearer", "OAUTHBEARER (RFC 7628)"


class ProviderKind(models.TextChoices):
    """The providers accounts.services.oauth_providers declares; the value names the declaration."""

    MICROSOFT = "microsoft", _("Microsoft (delegated sign-in)")
    MICROSOFT_APP = "microsoft_app", _("Microsoft app-only (company, client credentials)")
    GOOGLE = "google", _("Google (delegated sign-in)")
    GENERIC = "generic", _("Generic OAuth 2.0 / OpenID Connect (delegated sign-in)")
    GENERIC_APP = "generic_app", _("Generic OAuth 2.0 (client credentials)")


class GrantState(models.TextChoices):
    ACTIVE = "active", _("Signed in")
    NEEDS_SIGN_IN = "needs_sign_in", _("Needs sign-in again")
    REGISTRATION_REFUSED = "registration_refused", _("Registration refused by the provider")


class OAuthRegistration(models.Model):
    """An application registered with a provider, configured once for the deployment.

    Accounts signing in through it share its client ID and secret; the secret is stored
    encrypted with the key ring like an IMAP password and is never shown again.
    """

    name = models.CharField(max_length=100, unique=True)
    provider = models.CharField(max_length=32, choices=ProviderKind.choices)
    client_id = models.CharField(_("client ID"), max_length=300)
    client_secret_encrypted = models.TextField(blank=True, default="", editable=False)
    tenant = models.CharField(
        max_length=200,
        blank=True,
        default="",
        help_text=_(
            "Microsoft only: common, organizations, consumers, or the tenant's ID or domain "
            "(app-only needs the tenant's own ID or domain). Blank means common."
        ),
    )
    issuer_url = models.URLField(
        _("issuer URL"),
        max_length=500,
        blank=True,
        default="",
        help_text=_("Generic providers only: endpoints are read from its discovery document."),
    )
    scopes = models.CharField(
        max_length=500,
        blank=True,
        default="",
        help_text=_("Blank: the provider's own (docs/operations/mailbox-providers.md). Separate by spaces."),
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]
        verbose_name = _("OAuth registration")
        verbose_name_plural = _("OAuth registrations")

    def __str__(self) -> str:
        return self.name

    def set_client_secret(self, plain: str) -> None:
        self.client_secret_encrypted = crypto.encrypt(plain) if plain else ""

    def get_client_secret(self) -> str:
        return crypto.decrypt(self.client_secret_encrypted) if self.client_secret_encrypted else ""

    @property
    def has_client_secret(self) -> bool:
        return bool(self.client_secret_encrypted)

    def clean(self) -> None:
        errors: dict[str, str] = {}
        generic = self.provider in {ProviderKind.GENERIC, ProviderKind.GENERIC_APP}
        if generic and not self.issuer_url:
            errors["issuer_url"] = gettext("A generic provider needs its issuer URL.")
        if self.issuer_url and not generic:
            errors["issuer_url"] = gettext("Only a generic provider is configured by issuer URL.")
        if self.issuer_url and self.issuer_url.startswith("http:"):
            from urllib.parse import urlsplit

            if not is_loopback_host(urlsplit(self.issuer_url).hostname or ""):
                errors["issuer_url"] = gettext(
                    "An issuer must be reached over https (http only on a loopback host)."
                )
        if self.provider == ProviderKind.MICROSOFT_APP and self.tenant.casefold() in {
            "",
            "common",
            "organizations",
            "consumers",
        }:
            errors["tenant"] = gettext("App-only sign-in needs the tenant's own ID or domain.")
        if self.tenant and self.provider not in {ProviderKind.MICROSOFT, ProviderKind.MICROSOFT_APP}:
            errors["tenant"] = gettext("Only Microsoft registrations have a tenant.")
        if errors:
            raise ValidationError(errors)


class MailAccountQuerySet(models.QuerySet["MailAccount"]):
    def served(self) -> MailAccountQuerySet:
        """Accounts this deployment serves; rows of any other account are outside every read."""
        return self.filter(served=True)

    def synchronized(self) -> MailAccountQuerySet:
        """Accounts synchronization works on: served, with synchronization enabled.

        Polling, push watchers and every run ask this one question; the deployment-wide
        switch (MAILFATHOM_SYNC_ENABLED) is checked by the run itself.
        """
        return self.served().filter(sync_enabled=True).exclude(awaiting_someone())


def awaiting_someone() -> models.Q:
    """Accounts whose OAuth grant waits for a person (sign in again, fix the registration).

    Left out of synchronization, so a refused grant is not retried against the provider.
    """
    return models.Q(
        auth_method=AuthMethod.OAUTH2,
        oauth_grant__state__in=[GrantState.NEEDS_SIGN_IN, GrantState.REGISTRATION_REFUSED],
    )


class MailAccount(models.Model):
    account_id = models.SlugField(
        _("account identifier"),
        max_length=64,
        unique=True,
        help_text=_("The stable name every result reports. Cannot be changed once saved."),
    )
    display_name = models.CharField(max_length=200)
    served = models.BooleanField(
        default=True,
        help_text=_("Untick to stop serving this account: its stored mail stays, but no read reaches it."),
    )

    imap_host = models.CharField(_("IMAP host"), max_length=253)
    imap_port = models.PositiveIntegerField(
        _("IMAP port"), default=993, validators=[MinValueValidator(1), MaxValueValidator(65535)]
    )
    security = models.CharField(max_length=16, choices=Security.choices, default=Security.TLS)
    username = models.CharField(_("IMAP user name"), max_length=320)
    imap_ca_pem = models.TextField(
        _("IMAP server's CA certificate"),
        blank=True,
        default="",
        help_text=_(
            "PEM certificate(s) of the authority that signed the IMAP server's certificate, when "
            "it is an in-house one; trusted for this account only, besides the system's authorities."
        ),
    )
    credential_encrypted = models.TextField(blank=True, default="", editable=False)
    auth_method = models.CharField(
        _("authentication"), max_length=16, choices=AuthMethod.choices, default=AuthMethod.PASSWORD
    )
    oauth_registration = models.ForeignKey(
        OAuthRegistration,
        verbose_name=_("OAuth registration"),
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="accounts",
        help_text=_("Which registration signs this account in (OAuth 2.0 only)."),
    )
    sasl_mechanism = models.CharField(
        _("SASL mechanism"), max_length=16, choices=SaslMechanism.choices, default=SaslMechanism.XOAUTH2
    )
    download_bytes_per_day = models.PositiveBigIntegerField(
        _("download pace (bytes per day)"),
        default=0,
        help_text=_(
            "Most message bytes synchronization downloads per UTC day; 0 for no limit. For "
            "Gmail keep it under 2,500,000,000 (Gmail locks IMAP for a day above that)."
        ),
    )

    sync_enabled = models.BooleanField(_("synchronization enabled"), default=True)
    sync_mode = models.CharField(
        _("synchronization mode"), max_length=16, choices=SyncMode.choices, default=SyncMode.POLLING
    )
    poll_interval_seconds = models.PositiveIntegerField(
        default=300, validators=[MinValueValidator(30), MaxValueValidator(86400)]
    )
    max_message_bytes = models.PositiveBigIntegerField(
        _("per-message size limit (bytes)"),
        default=50 * 1024 * 1024,
        validators=[MinValueValidator(1024)],
        help_text=_("Larger messages are listed but their content is not downloaded."),
    )
    storage_ceiling_bytes = models.PositiveBigIntegerField(
        _("local storage ceiling (bytes)"),
        default=20 * 1024**3,
        validators=[MinValueValidator(1024 * 1024)],
    )

    answering_audit_enabled = models.BooleanField(_("answering audit trail enabled"), default=False)
    answering_audit_retention_days = models.PositiveIntegerField(
        _("answering audit retention (days)"),
        default=30,
        validators=[MinValueValidator(1), MaxValueValidator(3650)],
    )
    # A separate switch from the answering trail: one records what MailFathom changed, the
    # other what a question read, and an operator may hold either without the other
    # (docs/operations/compliance.md).
    mutation_audit_enabled = models.BooleanField(_("mutation trail enabled"), default=False)
    mutation_audit_retention_days = models.PositiveIntegerField(
        _("mutation trail retention (days)"),
        default=90,
        validators=[MinValueValidator(1), MaxValueValidator(3650)],
    )

    # Who read which mail, through MCP, admin or the people pages: a third record with its
    # own switch and window, since it names people and an operator may hold it without the
    # others (docs/operations/compliance.md, Access trail).
    access_trail_enabled = models.BooleanField(_("access trail enabled"), default=False)
    access_trail_retention_days = models.PositiveIntegerField(
        _("access trail retention (days)"),
        default=90,
        validators=[MinValueValidator(1), MaxValueValidator(3650)],
    )

    # Reply drafting (docs/operations/drafting.md): off until an operator switches it on.
    drafting_enabled = models.BooleanField(_("reply drafting enabled"), default=False)
    drafting_window_days = models.PositiveIntegerField(
        _("drafting window (days)"),
        default=7,
        validators=[MinValueValidator(1), MaxValueValidator(365)],
        help_text=_("Only mail received within this many days gets a draft."),
    )
    drafting_max_per_run = models.PositiveIntegerField(
        _("most drafts per run"),
        default=20,
        validators=[MinValueValidator(1), MaxValueValidator(500)],
    )
    drafting_append_mode = models.CharField(
        _("write drafts to the Drafts folder"),
        max_length=16,
        choices=DraftAppendMode.choices,
        default=DraftAppendMode.OFF,
    )

    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    objects = MailAccountQuerySet.as_manager()

    class Meta:
        ordering = ["account_id"]
        permissions = [
            # Operators: every account in admin, status and the draft queue, whoever its people are.
            ("see_every_account", "Can see every mail account (operators)"),
        ]
        constraints = [
            models.UniqueConstraint(Lower("display_name"), name="account_display_name_unique_ci"),
            models.CheckConstraint(
                condition=models.Q(imap_port__gte=1, imap_port__lte=65535), name="account_port_range"
            ),
            models.CheckConstraint(
                condition=models.Q(
                    answering_audit_retention_days__gte=1, answering_audit_retention_days__lte=3650
                ),
                name="account_audit_retention_range",
            ),
            models.CheckConstraint(
                condition=models.Q(
                    mutation_audit_retention_days__gte=1, mutation_audit_retention_days__lte=3650
                ),
                name="account_mutation_retention_range",
            ),
            models.CheckConstraint(
                condition=models.Q(access_trail_retention_days__gte=1, access_trail_retention_days__lte=3650),
                name="account_access_retention_range",
            ),
            models.CheckConstraint(
                condition=models.Q(drafting_window_days__gte=1, drafting_window_days__lte=365),
                name="account_drafting_window_range",
            ),
            models.CheckConstraint(
                condition=models.Q(drafting_max_per_run__gte=1, drafting_max_per_run__lte=500),
                name="account_drafting_per_run_range",
            ),
        ]

    def __str__(self) -> str:
        return self.display_name or self.account_id

    def save(self, *args: Any, **kwargs: Any) -> None:
        stored = self._stored()
        if stored is not None and stored[0] != self.account_id:
            raise ValidationError(IDENTIFIER_IMMUTABLE)
        super().save(*args, **kwargs)
        update_fields = kwargs.get("update_fields")
        written = update_fields is None or "drafting_enabled" in update_fields
        # An existing account switched on; a new one drafts once its first synchronization
        # stores mail (there is nothing to draft before).
        if stored is not None and not stored[1] and self.drafting_enabled and written:
            drafting_switched_on.send(sender=type(self), account_pk=self.pk)

    def _stored(self) -> tuple[str, bool] | None:
        """(account_id, drafting_enabled) as saved, or None for an account not saved yet."""
        if self.pk is None:
            return None
        return type(self).objects.filter(pk=self.pk).values_list("account_id", "drafting_enabled").first()

    # --- credential -----------------------------------------------------------------

    def set_credential(self, plain: str) -> None:
        self.credential_encrypted = crypto.encrypt(plain)

    def get_credential(self) -> str:
        return crypto.decrypt(self.credential_encrypted) if self.credential_encrypted else ""

    @property
    def has_credential(self) -> bool:
        return bool(self.credential_encrypted)

    # --- invariants -----------------------------------------------------------------

    def _identifier_changed(self) -> bool:
        stored = self._stored()
        return stored is not None and stored[0] != self.account_id

    def clean(self) -> None:
        errors: dict[str, str] = {}
        if self._identifier_changed():
            errors["account_id"] = str(IDENTIFIER_IMMUTABLE)
        if self.security == Security.NONE and not is_loopback_host(self.imap_host):
            errors["security"] = gettext("Unencrypted IMAP is allowed only for a loopback host.")
        if self.auth_method == AuthMethod.OAUTH2 and self.oauth_registration_id is None:
            errors["oauth_registration"] = gettext("OAuth 2.0 needs a registration to sign in with.")
        if has_control_character(self.display_name):
            # Callers name an account by its display name; one they cannot type is unreachable.
            errors["display_name"] = gettext("A display name may not contain control characters.")
        others = type(self).objects.exclude(pk=self.pk)
        if self.display_name and (
            others.filter(display_name__iexact=self.display_name).exists()
            or others.filter(account_id__iexact=self.display_name).exists()
        ):
            errors["display_name"] = gettext("Another account already answers to this name.")
        if self.account_id and others.filter(display_name__iexact=self.account_id).exists():
            errors["account_id"] = gettext("Another account's display name is already this identifier.")
        if errors:
            raise ValidationError(errors)


def normalize_alias(alias: str) -> str:
    """Return the case-normalized form every alias is stored and compared in."""
    return alias.strip().casefold()


class FolderMapping(models.Model):
    account = models.ForeignKey(MailAccount, on_delete=models.CASCADE, related_name="folders")
    alias = models.CharField(
        max_length=256, help_text=_("MailFathom's name for the folder; stored in lower case.")
    )
    remote_name = models.CharField(_("remote IMAP folder"), max_length=1000)
    role = models.CharField(max_length=16, choices=FolderRole.choices, blank=True, default="")
    visible_to_tools = models.BooleanField(
        default=True, help_text=_("Untick to keep this folder out of every MCP tool and answer.")
    )

    class Meta:
        ordering = ["account", "alias"]
        constraints = [
            models.UniqueConstraint(fields=["account", "alias"], name="folder_alias_unique_per_account"),
            models.UniqueConstraint(
                fields=["account", "role"],
                condition=~models.Q(role=""),
                name="folder_role_unique_per_account",
                violation_error_message=_("An account may map at most one folder per role."),
            ),
        ]

    def __str__(self) -> str:
        return f"{self.account.account_id}/{self.alias}"

    def save(self, *args: Any, **kwargs: Any) -> None:
        self.alias = normalize_alias(self.alias)
        super().save(*args, **kwargs)

    def clean(self) -> None:
        self.alias = normalize_alias(self.alias)
        if not self.alias:
            raise ValidationError({"alias": gettext("An alias may not be blank.")})
        if has_control_character(self.alias):
            raise ValidationError({"alias": gettext("An alias may not contain control characters.")})


class McpApiKeyQuerySet(models.QuerySet["McpApiKey"]):
    def active(self) -> McpApiKeyQuerySet:
        """Keys that still open /mcp: not revoked."""
        return self.filter(revoked_at__isnull=True)


class McpApiKey(models.Model):
    """A key an MCP client presents as `Authorization: Bearer`; only its SHA-256 is stored.

    The key itself is shown once, when it is created (accounts.services.mcp_keys). The
    prefix is its first characters, kept so an operator can tell keys apart in admin.
    """

    name = models.CharField(max_length=100, help_text=_("Who or what uses this key, for your own records."))
    prefix = models.CharField(max_length=16, editable=False)
    key_hash = models.CharField(max_length=64, unique=True, editable=False)
    created_at = models.DateTimeField(auto_now_add=True)
    revoked_at = models.DateTimeField(null=True, blank=True, editable=False)
    last_used_at = models.DateTimeField(null=True, blank=True, editable=False)
    # An explicit flag rather than "some accounts chosen means limited": deleting the one
    # account a limited key was for must leave it reading nothing, not every account.
    limited = models.BooleanField(
        _("limited to the accounts chosen"),
        default=False,
        help_text=_("Tick to let the key read only the accounts chosen below; unticked, it reads all."),
    )
    accounts = models.ManyToManyField(
        MailAccount,
        blank=True,
        related_name="mcp_keys",
        help_text=_("The only accounts the key may read, when it is limited."),
    )

    objects = McpApiKeyQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at"]
        verbose_name = _("MCP API key")
        verbose_name_plural = _("MCP API keys")

    def __str__(self) -> str:
        return f"{self.name} ({self.prefix}…)"

    @property
    def is_revoked(self) -> bool:
        return self.revoked_at is not None


class DraftingSignature(models.Model):
    """The signature a draft in one language ends with; the language picks the variant."""

    account = models.ForeignKey(MailAccount, on_delete=models.CASCADE, related_name="drafting_signatures")
    language = models.CharField(max_length=2, help_text=_("ISO 639-1 code, such as en or de."))
    text = models.TextField()

    class Meta:
        ordering = ["account", "language"]
        constraints = [
            models.UniqueConstraint(
                fields=["account", "language"], name="drafting_signature_language_unique"
            ),
        ]

    def __str__(self) -> str:
        return self.language

    def clean(self) -> None:
        self.language = self.language.strip().lower()
        if len(self.language) != 2 or not self.language.isascii() or not self.language.isalpha():
            raise ValidationError({"language": gettext("Give a two-letter ISO 639-1 language code.")})


class DraftingExample(models.Model):
    """An incoming mail and the reply this account would send: few-shot material for its voice."""

    account = models.ForeignKey(MailAccount, on_delete=models.CASCADE, related_name="drafting_examples")
    position = models.PositiveIntegerField(default=0)
    incoming = models.TextField(_("incoming mail"))
    reply = models.TextField()

    class Meta:
        ordering = ["account", "position", "id"]

    def __str__(self) -> str:
        return f"example {self.position}"


class OAuthGrant(models.Model):
    """What an account's OAuth 2.0 sign-in left: its tokens (encrypted), who, what and until when.

    One per account. The row is also the lock two workers refreshing at once take
    (accounts.services.oauth_tokens), so a rotated refresh token is never lost.
    """

    account = models.OneToOneField(MailAccount, on_delete=models.CASCADE, related_name="oauth_grant")
    state = models.CharField(max_length=32, choices=GrantState.choices, default=GrantState.ACTIVE)
    state_code = models.PositiveIntegerField(null=True, blank=True)
    state_since = models.DateTimeField(null=True, blank=True)
    subject = models.CharField(
        _("signed in as"), max_length=320, blank=True, default="", help_text=_("As the provider named them.")
    )
    scopes = models.CharField(_("scopes granted"), max_length=1000, blank=True, default="")
    signed_in_at = models.DateTimeField(null=True, blank=True)
    access_token_encrypted = models.TextField(blank=True, default="", editable=False)
    access_expires_at = models.DateTimeField(null=True, blank=True)
    refresh_token_encrypted = models.TextField(blank=True, default="", editable=False)
    refreshed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        verbose_name = _("OAuth sign-in")

    def __str__(self) -> str:
        return f"{self.account.account_id}: {self.get_state_display()}"

    @property
    def has_refresh_token(self) -> bool:
        return bool(self.refresh_token_encrypted)

    def access_token(self) -> str:
        return crypto.decrypt(self.access_token_encrypted) if self.access_token_encrypted else ""

    def refresh_token(self) -> str:
        return crypto.decrypt(self.refresh_token_encrypted) if self.refresh_token_encrypted else ""


class MembershipRole(models.TextChoices):
    OWNER = "owner", _("Owner: reads, reviews and approves drafts, connects assistants")
    DELEGATE = "delegate", _("Delegate: reads and reviews drafts")
    REVIEWER = "reviewer", _("Reviewer: reviews drafts only")


class AccountMembership(models.Model):
    """A person (a user, or every member of a group) with a role on one mail account.

    What a person may see is decided from these rows alone (accounts.services.people), by
    the same scope resolution every read uses; operators (accounts.see_every_account) and
    superusers see every account without one.
    """

    account = models.ForeignKey(MailAccount, on_delete=models.CASCADE, related_name="memberships")
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="mail_memberships",
    )
    group = models.ForeignKey(
        Group, null=True, blank=True, on_delete=models.CASCADE, related_name="mail_memberships"
    )
    role = models.CharField(max_length=16, choices=MembershipRole.choices, default=MembershipRole.OWNER)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["account", "role"]
        verbose_name = _("person")
        verbose_name_plural = _("people")
        constraints = [
            models.CheckConstraint(
                condition=models.Q(user__isnull=False, group__isnull=True)
                | models.Q(user__isnull=True, group__isnull=False),
                name="membership_user_or_group",
                violation_error_message=_("Choose a user or a group, not both."),
            ),
            models.UniqueConstraint(fields=["account", "user"], name="membership_user_unique"),
            models.UniqueConstraint(fields=["account", "group"], name="membership_group_unique"),
        ]

    def __str__(self) -> str:
        who = self.user.get_username() if self.user else f"group {self.group}"
        return f"{who} ({self.get_role_display().split(':')[0].lower()})"


TIME_ZONES = frozenset(zoneinfo.available_timezones())


def validate_time_zone(value: str) -> None:
    """An IANA zone name this Python knows (zoneinfo), or empty for the deployment's own."""
    if value and value not in TIME_ZONES:
        raise ValidationError(
            _("Unknown time zone: give an IANA name such as Europe/Berlin."), code="invalid"
        )


class UserPreference(models.Model):
    """What one person chose for how the admin shows things to them: for now, their time zone."""

    user = models.OneToOneField(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="mailfathom_preference"
    )
    time_zone = models.CharField(
        _("time zone"),
        max_length=64,
        blank=True,
        default="",
        validators=[validate_time_zone],
        help_text=_(
            "Times in the admin are shown in this zone, e.g. Europe/Berlin. Leave it empty for the "
            "deployment's own (the TIME_ZONE setting)."
        ),
    )

    class Meta:
        verbose_name = _("user preference")
        verbose_name_plural = _("user preferences")

    def __str__(self) -> str:
        return f"{self.user} ({self.time_zone or settings.TIME_ZONE})"


# Labels Django derived from the field and model names, the same words made translatable
# without a migration (mailfathom.core.labels says why).
label_model(MailAccount, _("mail account"), _("mail accounts"))
label_model(FolderMapping, _("folder mapping"), _("folder mappings"))
label_model(DraftingSignature, _("drafting signature"), _("drafting signatures"))
label_model(DraftingExample, _("drafting example"), _("drafting examples"))
# Declared in Meta; the plural given here, which Django would build by appending an "s".
label_model(OAuthGrant, _("OAuth sign-in"), _("OAuth sign-ins"))
label_fields(
    OAuthRegistration,
    name=_("name"),
    provider=_("provider"),
    tenant=_("tenant"),
    scopes=_("scopes"),
    created_at=_("created at"),
)
label_fields(
    MailAccount,
    display_name=_("display name"),
    served=_("served"),
    security=_("security"),
    poll_interval_seconds=_("poll interval seconds"),
    created_at=_("created at"),
    updated_at=_("updated at"),
)
label_fields(
    FolderMapping,
    account=_("account"),
    alias=_("alias"),
    role=_("role"),
    visible_to_tools=_("visible to tools"),
)
label_fields(
    McpApiKey,
    name=_("name"),
    prefix=_("prefix"),
    created_at=_("created at"),
    revoked_at=_("revoked at"),
    last_used_at=_("last used at"),
    accounts=_("accounts"),
)
label_fields(DraftingSignature, language=_("language"), text=_("text"))
label_fields(DraftingExample, position=_("position"), reply=_("reply"))
label_fields(AccountMembership, user=_("user"), group=_("group"), role=_("role"))

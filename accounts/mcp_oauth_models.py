"""What MailFathom keeps as the authorization server of /mcp: clients, connections, codes, tokens.

A connection is one person's consent for one client: the accounts it may read, until the
person or an operator revokes it. Codes and tokens hang off it; of each only the SHA-256 is
stored (mailfathom.core.credentials), so a database copy opens nothing. Every refresh token a
connection was issued stays on record after it is replaced, so a replaced one presented again
is recognized and ends the whole connection (accounts.services.mcp_oauth_tokens).
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils.translation import gettext_lazy as _

from mailfathom.core.labels import label_fields


class ClientKind(models.TextChoices):
    REGISTERED = "registered", _("Registered itself (dynamic registration)")
    METADATA_DOCUMENT = "metadata", _("Identified by its metadata document (an https client_id)")


class McpOAuthClientQuerySet(models.QuerySet["McpOAuthClient"]):
    def enabled(self) -> McpOAuthClientQuerySet:
        return self.filter(disabled_at__isnull=True)


class McpOAuthClient(models.Model):
    """An MCP client (Claude, an IDE, a script) known to the authorization server.

    Public clients only send no secret (PKCE protects their codes); a client that registered
    for client_secret_post or client_secret_basic got a secret, of which the SHA-256 is kept.
    An operator disables a client to refuse it everywhere at once: new sign-ins, token
    requests and every /mcp call made with a token it already holds.
    """

    client_id = models.CharField(max_length=2048, unique=True, editable=False)
    kind = models.CharField(max_length=16, choices=ClientKind.choices, editable=False)
    client_name = models.CharField(max_length=200, editable=False)
    client_uri = models.CharField(max_length=2048, blank=True, default="", editable=False)
    redirect_uris = models.JSONField(default=list, editable=False)
    token_endpoint_auth_method = models.CharField(max_length=32, default="none", editable=False)
    client_secret_hash = models.CharField(max_length=64, blank=True, default="", editable=False)
    created_at = models.DateTimeField(auto_now_add=True)
    fetched_at = models.DateTimeField(
        null=True, blank=True, editable=False, help_text=_("When its metadata document was last read.")
    )
    last_used_at = models.DateTimeField(null=True, blank=True, editable=False)
    disabled_at = models.DateTimeField(null=True, blank=True, editable=False)

    objects = McpOAuthClientQuerySet.as_manager()

    class Meta:
        ordering = ["client_name", "pk"]
        verbose_name = _("MCP OAuth client")
        verbose_name_plural = _("MCP OAuth clients")

    def __str__(self) -> str:
        return self.client_name or self.client_id

    @property
    def is_disabled(self) -> bool:
        return self.disabled_at is not None


class McpConnectionQuerySet(models.QuerySet["McpConnection"]):
    def active(self) -> McpConnectionQuerySet:
        """Connections still open: not revoked, their client not disabled."""
        return self.filter(revoked_at__isnull=True, client__disabled_at__isnull=True)


class McpConnection(models.Model):
    """One person's consent that one client may read some of their accounts through /mcp."""

    client = models.ForeignKey(McpOAuthClient, on_delete=models.CASCADE, related_name="connections")
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="mcp_connections"
    )
    accounts = models.ManyToManyField(
        "accounts.MailAccount",
        blank=True,
        related_name="mcp_connections",
        help_text=_("The accounts the person chose; each call also needs them to still own it."),
    )
    scope = models.CharField(max_length=200)
    resource = models.CharField(max_length=2048, help_text=_("The /mcp URL its tokens are for."))
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True, editable=False)
    revoked_at = models.DateTimeField(null=True, blank=True, editable=False)

    objects = McpConnectionQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at"]
        verbose_name = _("MCP connection")
        verbose_name_plural = _("MCP connections")

    def __str__(self) -> str:
        return f"{self.client} for {self.user}"

    @property
    def is_revoked(self) -> bool:
        return self.revoked_at is not None


# Labels Django derived from the field names, the same words made translatable without a
# migration (mailfathom.core.labels says why).
label_fields(
    McpOAuthClient,
    client_id=_("client id"),
    kind=_("kind"),
    client_name=_("client name"),
    created_at=_("created at"),
    last_used_at=_("last used at"),
)
label_fields(
    McpConnection,
    client=_("client"),
    user=_("user"),
    created_at=_("created at"),
    last_used_at=_("last used at"),
    revoked_at=_("revoked at"),
)


class McpAuthorizationCode(models.Model):
    """A code just handed to a client's redirect URI, with what the person consented to."""

    code_hash = models.CharField(max_length=64, unique=True)
    client = models.ForeignKey(McpOAuthClient, on_delete=models.CASCADE, related_name="+")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    account_pks = models.JSONField(default=list)
    redirect_uri = models.CharField(max_length=2048)
    scope = models.CharField(max_length=200)
    resource = models.CharField(max_length=2048)
    code_challenge = models.CharField(max_length=128)
    code_challenge_method = models.CharField(max_length=8)
    expires_at = models.DateTimeField()
    used_at = models.DateTimeField(null=True, blank=True)
    # The connection its exchange opened: a code presented twice ends it (RFC 6749 §4.1.2).
    connection = models.ForeignKey(
        McpConnection, null=True, blank=True, on_delete=models.CASCADE, related_name="+"
    )

    def __str__(self) -> str:
        return f"code for {self.client}"


class McpToken(models.Model):
    """An access token and the refresh token issued with it, as digests."""

    connection = models.ForeignKey(McpConnection, on_delete=models.CASCADE, related_name="tokens")
    access_hash = models.CharField(max_length=64, unique=True)
    access_expires_at = models.DateTimeField()
    refresh_hash = models.CharField(max_length=64, unique=True, null=True, blank=True)
    refresh_expires_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    replaced_at = models.DateTimeField(null=True, blank=True, help_text="When its refresh token was used.")
    revoked_at = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return f"token of {self.connection}"

"""Operator console for mail accounts and their folder mappings."""

from __future__ import annotations

from datetime import datetime

from django.contrib import admin, messages
from django.forms import ModelForm
from django.http import HttpRequest
from django.urls import URLPattern, path, reverse
from django.utils import timezone
from django.utils.html import format_html, format_html_join
from django.utils.safestring import mark_safe
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from accounts import (
    admin_mcp,  # noqa: F401  (registers the MCP key admin)
    admin_mcp_oauth,  # noqa: F401  (registers the MCP OAuth clients and connections admin)
    admin_sign_in,
)
from accounts.admin_connection import test_and_map_view, test_connection_view
from accounts.admin_people import PeopleScoped
from accounts.forms import FolderMappingFormSet, MailAccountForm, OAuthRegistrationForm
from accounts.models import (
    AccountMembership,
    AuthMethod,
    DraftingExample,
    DraftingSignature,
    FolderMapping,
    GrantState,
    MailAccount,
    OAuthGrant,
    OAuthRegistration,
    SyncMode,
)
from accounts.services import oauth_providers, people
from mailfathom.core.errors import Code, code_of


class DraftingSignatureInline(admin.TabularInline):
    model = DraftingSignature
    extra = 0
    fields = ["language", "text"]
    verbose_name = _("drafting signature")
    # Given, or Django appends an "s" to the translated singular.
    verbose_name_plural = _("drafting signatures")


class DraftingExampleInline(admin.StackedInline):
    model = DraftingExample
    extra = 0
    fields = ["position", "incoming", "reply"]
    verbose_name = _("drafting example (few-shot)")
    # Without it Django appends an "s" to the whole name: "drafting example (few-shot)s".
    verbose_name_plural = _("drafting examples (few-shot)")


PUSH_TAKES_EFFECT = _(
    "Push mode takes effect within a minute of the account's first synchronization: beat "
    "starts an IMAP IDLE watcher per mapped folder every 60 seconds (the push worker runs "
    "them). Polling goes on beside it."
)
POLLING_TAKES_EFFECT = _(
    "Polling only from now on: running IDLE watchers end within 20 minutes and are not restarted."
)


class PeopleInline(admin.TabularInline):
    """Who this account belongs to: owners, delegates and reviewers (accounts.services.people)."""

    model = AccountMembership
    extra = 0
    fields = ["user", "group", "role"]
    verbose_name = _("person")
    verbose_name_plural = _("people (owners, delegates and reviewers)")


class FolderMappingInline(admin.TabularInline):
    model = FolderMapping
    formset = FolderMappingFormSet
    extra = 1
    fields = ["alias", "remote_name", "role", "visible_to_tools"]


class MailAccountAdmin(PeopleScoped):
    """The account itself: its form, folders, drafting texts and the connection test.

    A person sees the accounts they hold any role on (and changes them only with the
    change permission too); every page of an account outside them, the connection test
    and sign-in included, is 404. Registered by mailfathom.admin together with the parts
    mailbox and answering add.
    """

    account_roles = people.REVIEW_ROLES
    account_field = "pk"

    form = MailAccountForm
    inlines = [PeopleInline, FolderMappingInline, DraftingSignatureInline, DraftingExampleInline]
    list_display = ["account_id", "display_name", "imap_host", "served", "sync_enabled", "sync_mode"]
    list_filter = ["served", "sync_enabled", "sync_mode", "security"]
    search_fields = ["account_id", "display_name"]
    readonly_fields = ["credential_status", "sign_in_status", "connection_link", "created_at", "updated_at"]
    fieldsets = [
        (None, {"fields": ["account_id", "display_name", "served"]}),
        (
            _("IMAP server"),
            {
                "fields": [
                    "imap_host",
                    "imap_port",
                    "security",
                    "imap_ca_pem",
                    "imap_ca_upload",
                    "username",
                    "auth_method",
                    "credential",
                    "credential_status",
                    "oauth_registration",
                    "sasl_mechanism",
                    "sign_in_status",
                    "connection_link",
                ]
            },
        ),
        (
            _("Synchronization"),
            {
                "fields": [
                    "sync_enabled",
                    "sync_mode",
                    "poll_interval_seconds",
                    "max_message_bytes",
                    "storage_ceiling_bytes",
                    "download_bytes_per_day",
                ]
            },
        ),
        (
            _("Answering audit trail"),
            {"fields": ["answering_audit_enabled", "answering_audit_retention_days"]},
        ),
        (_("Mutation trail"), {"fields": ["mutation_audit_enabled", "mutation_audit_retention_days"]}),
        (_("Access trail"), {"fields": ["access_trail_enabled", "access_trail_retention_days"]}),
        (
            _("Reply drafting"),
            {
                "fields": [
                    "drafting_enabled",
                    "drafting_window_days",
                    "drafting_max_per_run",
                    "drafting_append_mode",
                ]
            },
        ),
        (_("Record"), {"fields": ["created_at", "updated_at"], "classes": ["collapse"]}),
    ]

    def get_readonly_fields(self, request: HttpRequest, obj: MailAccount | None = None) -> list[str]:
        fields = list(super().get_readonly_fields(request, obj))
        if obj is not None:
            fields.append("account_id")  # immutable once saved: every result reports it
        return fields

    @admin.display(description=_("Credential"))
    def credential_status(self, obj: MailAccount) -> str:
        return gettext("stored (encrypted)") if obj.has_credential else gettext("none stored")

    @admin.display(description=_("Sign-in"))
    def sign_in_status(self, obj: MailAccount) -> str:
        """Who signed in, when, with which scopes and until when; never a token."""
        if obj.auth_method != AuthMethod.OAUTH2:
            return gettext("Not used: this account logs in with a password.")
        registration = obj.oauth_registration
        if obj.pk is None or registration is None:
            return gettext("Choose an OAuth registration and save the account, then sign in here.")
        provider = oauth_providers.provider_of(registration)
        grant = OAuthGrant.objects.filter(account=obj).first()
        lines = [_grant_summary(grant, provider.signs_in_people)]
        if provider.signs_in_people:
            url = reverse("admin:accounts_mailaccount_sign_in", args=[obj.pk])
            lines.append(
                format_html(
                    '<button type="submit" class="button" formaction="{}" formmethod="post" '
                    'formnovalidate name="_sign_in">{}</button> <span class="help">{}</span>',
                    url,
                    provider.sign_in_label,
                    gettext("Unsaved changes on this page are not kept: save first."),
                )
            )
        return format_html_join_lines(lines)

    @admin.display(description=_("Connection"))
    def connection_link(self, obj: MailAccount) -> str:
        if obj.pk is None:
            return gettext("Save the account first, then test its connection.")
        one_click = reverse("admin:accounts_mailaccount_test_and_map", args=[obj.pk])
        by_hand = reverse("admin:accounts_mailaccount_test_connection", args=[obj.pk])
        return format_html(
            '<button type="submit" class="button" id="test-and-map" formaction="{}" formmethod="post" '
            'formnovalidate name="_test_and_map">{}</button> '
            '<a href="{}" id="map-by-hand">{}</a><div class="help">{}</div>',
            one_click,
            gettext("Test connection and map folders"),
            by_hand,
            gettext("Choose folders by hand, or test other settings"),
            gettext(
                "Tests the saved settings and maps Inbox and the folders the server marks as Sent, "
                "Drafts, Archive, Junk and Trash (Junk and Trash hidden from tools). Unsaved changes "
                "on this page are not kept: save first."
            ),
        )

    def save_model(self, request: HttpRequest, obj: MailAccount, form: ModelForm, change: bool) -> None:
        super().save_model(request, obj, form, change)
        if "sync_mode" in form.changed_data or (not change and obj.sync_mode == SyncMode.PUSH):
            if obj.sync_mode == SyncMode.PUSH:
                messages.info(request, PUSH_TAKES_EFFECT)
            elif change:
                messages.info(request, POLLING_TAKES_EFFECT)

    def get_urls(self) -> list[URLPattern]:
        custom = [
            path(
                "<path:object_id>/test-connection/",
                self.admin_site.admin_view(
                    lambda request, object_id: test_connection_view(self, request, object_id)
                ),
                name="accounts_mailaccount_test_connection",
            ),
            path(
                "<path:object_id>/test-and-map/",
                self.admin_site.admin_view(
                    lambda request, object_id: test_and_map_view(self, request, object_id)
                ),
                name="accounts_mailaccount_test_and_map",
            ),
            path(
                "<path:object_id>/sign-in/",
                self.admin_site.admin_view(
                    lambda request, object_id: admin_sign_in.start(self, request, object_id)
                ),
                name="accounts_mailaccount_sign_in",
            ),
        ]
        return custom + super().get_urls()


def _grant_summary(grant: OAuthGrant | None, signs_in_people: bool) -> str:
    if grant is None:
        if signs_in_people:
            return gettext("Not signed in yet.")
        return gettext("No token fetched yet: the first run fetches one.")
    if grant.state != GrantState.ACTIVE:
        code = code_of(grant.state_code) or Code.SIGN_IN_NEEDED
        return format_html(
            "<strong>{}</strong> ({}): {}", grant.get_state_display(), int(code), code.sentence
        )
    who = grant.subject or gettext("an identity the provider did not name")
    # One sentence with named places, so a translation may order them as its language needs.
    return format_html(
        gettext(
            "Signed in as <strong>{who}</strong> on {signed_in}; scopes granted: {scopes}; "
            "access token valid until {expires}."
        ),
        who=who,
        signed_in=_when(grant.signed_in_at),
        scopes=grant.scopes or gettext("not stated"),
        expires=_when(grant.access_expires_at),
    )


def _when(moment: datetime | None) -> str:
    if moment is None:
        return gettext("unknown")
    return timezone.localtime(moment).strftime("%Y-%m-%d %H:%M %Z")


def format_html_join_lines(lines: list[str]) -> str:
    return format_html_join(mark_safe("<br>"), "{}", ((line,) for line in lines))


@admin.register(OAuthRegistration)
class OAuthRegistrationAdmin(admin.ModelAdmin):
    """The deployment's registrations with providers; the client secret is write-only."""

    form = OAuthRegistrationForm
    list_display = ["name", "provider", "client_id", "secret_status"]
    readonly_fields = ["secret_status", "redirect_uri_hint", "created_at"]
    fields = [
        "name",
        "provider",
        "client_id",
        "client_secret",
        "secret_status",
        "tenant",
        "issuer_url",
        "scopes",
        "redirect_uri_hint",
        "created_at",
    ]

    @admin.display(description=_("Client secret"))
    def secret_status(self, obj: OAuthRegistration) -> str:
        return gettext("stored (encrypted)") if obj.has_client_secret else gettext("none stored")

    @admin.display(description=_("Redirect URI to register at the provider"))
    def redirect_uri_hint(self, obj: OAuthRegistration) -> str:
        return format_html(
            gettext(
                "<code>&lt;your address&gt;/{path}</code> (with MAILFATHOM_PUBLIC_BASE_URL set, that address)"
            ),
            path=admin_sign_in.SIGN_IN_CALLBACK_PATH,
        )

    def save_model(self, request: HttpRequest, obj: OAuthRegistration, form: ModelForm, change: bool) -> None:
        super().save_model(request, obj, form, change)
        oauth_providers.forget_discovered()

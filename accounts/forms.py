"""Admin forms for mail accounts: the credential is write-only; sizes are typed in KB, MB or GB."""

from __future__ import annotations

from decimal import Decimal, InvalidOperation
from typing import TYPE_CHECKING, Any

from django import forms
from django.core.exceptions import ValidationError
from django.utils.translation import get_language, gettext
from django.utils.translation import gettext_lazy as _

from accounts.certificates import MAX_PEM_CHARS, clean_ca_bundle
from accounts.models import (
    DEFAULT_PORTS,
    AuthMethod,
    MailAccount,
    OAuthGrant,
    OAuthRegistration,
    normalize_alias,
)

if TYPE_CHECKING:  # the stubs' name for a string or a lazy translation; a development package
    from django_stubs_ext import StrOrPromise

# Binary units, as mail servers and operating systems count storage: 1 MB is 1,048,576 bytes.
UNITS = {"KB": 1024, "MB": 1024**2, "GB": 1024**3}
UNIT_CHOICES = [(unit, unit) for unit in UNITS]


def stored_secret_field(label: StrOrPromise, *, strip: bool) -> forms.CharField:
    """A secret the form stores encrypted: never rendered back, blank keeps the stored one."""
    return forms.CharField(
        label=label,
        required=False,
        strip=strip,
        widget=forms.PasswordInput(render_value=False, attrs={"autocomplete": "new-password"}),
        help_text=_("Stored encrypted and never shown again. Leave blank to keep the stored one."),
    )


def in_units(size: int) -> tuple[Decimal, str]:
    """The largest unit that writes `size` bytes exactly with at most three decimals.

    Any other byte count (set outside the form) is written exactly in KB, so saving the
    form unchanged never changes the stored value.
    """
    for unit in ("GB", "MB", "KB"):
        number = Decimal(size) / UNITS[unit]
        if size >= UNITS[unit] and number == number.quantize(Decimal("0.001")):
            return number.normalize(), unit
    return (Decimal(size) / UNITS["KB"]).normalize(), "KB"


class ByteSizeWidget(forms.MultiWidget):
    template_name = "django/forms/widgets/multiwidget.html"

    def __init__(self, attrs: dict[str, Any] | None = None) -> None:
        number = forms.NumberInput(attrs={"step": "any", "min": "0", "style": "width: 8em", **(attrs or {})})
        super().__init__([number, forms.Select(choices=UNIT_CHOICES)], attrs)

    def decompress(self, value: Any) -> list[Any]:
        if value in (None, ""):
            return [None, "MB"]
        number, unit = in_units(int(value))
        return [int(number) if number == number.to_integral() else number, unit]


class ByteSizeField(forms.MultiValueField):
    """A size typed as a number and a unit (KB, MB, GB); cleaned to whole bytes.

    The model keeps bytes; only the form speaks in units. `minimum` is in bytes and is
    named back in the unit the operator used.
    """

    widget = ByteSizeWidget

    def __init__(self, *, minimum: int, **kwargs: Any) -> None:
        self.minimum = minimum
        fields = (
            forms.DecimalField(min_value=0, max_digits=24, decimal_places=10),
            forms.ChoiceField(choices=UNIT_CHOICES),
        )
        super().__init__(fields, require_all_fields=True, **kwargs)

    def compress(self, data_list: list[Any]) -> int | None:
        if not data_list:
            return None
        number, unit = data_list
        try:
            size = int(Decimal(number) * UNITS[unit])
        except (InvalidOperation, KeyError, TypeError):
            raise forms.ValidationError(gettext("Enter a number and a unit.")) from None
        if size < self.minimum:
            low, low_unit = in_units(self.minimum)
            whole = int(low) if low == low.to_integral() else low
            raise forms.ValidationError(
                gettext("Enter at least %(amount)s %(unit)s.") % {"amount": whole, "unit": low_unit}
            )
        return size


class MailAccountForm(forms.ModelForm):
    credential = stored_secret_field(_("IMAP password or app password"), strip=False)
    # A declared field takes no default from the model, so a new account's form states it.
    max_message_bytes = ByteSizeField(
        label=_("Per-message size limit"),
        minimum=1024,
        initial=MailAccount._meta.get_field("max_message_bytes").default,
        help_text=_(
            "Larger messages are listed but their content is not downloaded. 1 MB = 1,048,576 bytes."
        ),
    )
    storage_ceiling_bytes = ByteSizeField(
        label=_("Local storage ceiling"),
        minimum=1024 * 1024,
        initial=MailAccount._meta.get_field("storage_ceiling_bytes").default,
        help_text=_("Compressed content this account may hold locally; beyond it, content waits for room."),
    )

    download_bytes_per_day = ByteSizeField(
        label=_("Download pace per day"),
        minimum=0,
        required=False,
        initial=0,
        help_text=_(
            "Most message bytes synchronization downloads per UTC day; 0 for no pace. For Gmail "
            "stay under 2.3 GB (Gmail locks IMAP for a day at about 2.5 GB)."
        ),
    )

    imap_ca_upload = forms.FileField(
        label=_("Upload CA certificate"),
        required=False,
        help_text=_("A .pem or .crt file in PEM form; it replaces the text above."),
        widget=forms.ClearableFileInput(attrs={"accept": ".pem,.crt,.cer,application/x-pem-file"}),
    )

    class Meta:
        model = MailAccount
        fields = [
            "account_id",
            "display_name",
            "served",
            "imap_host",
            "imap_port",
            "security",
            "username",
            "imap_ca_pem",
            "auth_method",
            "oauth_registration",
            "sasl_mechanism",
            "download_bytes_per_day",
            "sync_enabled",
            "sync_mode",
            "poll_interval_seconds",
            "max_message_bytes",
            "storage_ceiling_bytes",
            "answering_audit_enabled",
            "answering_audit_retention_days",
        ]
        widgets = {"imap_ca_pem": forms.Textarea(attrs={"rows": 4, "cols": 70, "spellcheck": "false"})}

    # The stored password belongs to the server it was saved for: moving the account to
    # another server must not carry it there (docs/operations/accounts.md).
    SERVER_FIELDS = ("imap_host", "imap_port", "security", "username")

    def clean_download_bytes_per_day(self) -> int:
        return int(self.cleaned_data.get("download_bytes_per_day") or 0)

    def _port_follows_security(self, cleaned: dict[str, Any]) -> None:
        """A port left at the other security mode's default takes the chosen mode's default.

        Only when the security changed and the port did not: a port the operator typed is
        kept, whatever it is. The page's script does the same as the choice is made.
        """
        security, port = cleaned.get("security"), cleaned.get("imap_port")
        if security not in DEFAULT_PORTS or port is None:
            return
        if "security" not in self.changed_data or "imap_port" in self.changed_data:
            return
        wanted = DEFAULT_PORTS[security]
        if port != wanted and port in DEFAULT_PORTS.values():
            cleaned["imap_port"] = wanted

    def _clean_ca(self, cleaned: dict[str, Any]) -> None:
        """The CA bundle, uploaded or pasted, as validated PEM; an upload replaces the text."""
        upload = cleaned.get("imap_ca_upload")
        field = "imap_ca_upload" if upload else "imap_ca_pem"
        text = cleaned.get("imap_ca_pem") or ""
        if upload:
            raw = upload.read(MAX_PEM_CHARS + 1)
            try:
                text = raw.decode("ascii")
            except UnicodeDecodeError:
                text = "not PEM"  # binary (DER, say): refused below as not PEM
        try:
            cleaned["imap_ca_pem"] = clean_ca_bundle(text)
        except ValidationError as error:
            self.add_error(field, error)
            cleaned.pop("imap_ca_pem", None)

    def _ca_added(self, cleaned: dict[str, Any]) -> bool:
        """Whether a CA the account did not trust before is now given (removing one is not)."""
        new = cleaned.get("imap_ca_pem") or ""
        return bool(new) and new != self.instance.imap_ca_pem

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        self._port_follows_security(cleaned)
        self._clean_ca(cleaned)
        if cleaned.get("auth_method") == AuthMethod.OAUTH2:
            return cleaned  # no password: the sign-in is done from the saved account
        if not self.instance.has_credential and not cleaned.get("credential"):
            self.add_error("credential", gettext("A new account needs a credential."))
        elif self.instance.pk and not cleaned.get("credential"):
            moved = [name for name in self.SERVER_FIELDS if name in self.changed_data]
            if self._ca_added(cleaned):
                moved.append("imap_ca_pem")
            if moved:
                # Lower case inside an English sentence; German keeps its nouns capitalized.
                english = get_language().startswith("en")
                labels = ", ".join(
                    str(self.fields[name].label).lower() if english else str(self.fields[name].label)
                    for name in moved
                )
                self.add_error(
                    "credential",
                    gettext(
                        "Enter the password again: the stored one is sent only to the server it was "
                        "saved for, and the %(fields)s changed."
                    )
                    % {"fields": labels},
                )
        return cleaned

    def save(self, commit: bool = True) -> MailAccount:
        account: MailAccount = super().save(commit=False)
        if self.cleaned_data.get("credential"):
            account.set_credential(self.cleaned_data["credential"])
        self._forget_moved_sign_in(account)  # admin saves with commit=False, then saves itself
        if commit:
            account.save()
            self.save_m2m()
        return account

    # A token is a bearer credential: like a password, it goes only to the server and through
    # the registration it was granted for.
    SIGN_IN_FIELDS = (*SERVER_FIELDS, "auth_method", "oauth_registration")

    def _forget_moved_sign_in(self, account: MailAccount) -> None:
        if account.pk and any(name in self.changed_data for name in self.SIGN_IN_FIELDS):
            OAuthGrant.objects.filter(account=account).delete()


class OAuthRegistrationForm(forms.ModelForm):
    client_secret = stored_secret_field(_("Client secret"), strip=True)

    issuer_url = forms.URLField(
        label=_("Issuer URL"),
        required=False,
        assume_scheme="https",
        max_length=500,
        help_text=OAuthRegistration._meta.get_field("issuer_url").help_text,
    )

    class Meta:
        model = OAuthRegistration
        fields = ["name", "provider", "client_id", "tenant", "issuer_url", "scopes"]

    def save(self, commit: bool = True) -> OAuthRegistration:
        registration: OAuthRegistration = super().save(commit=False)
        if self.cleaned_data.get("client_secret"):
            registration.set_client_secret(self.cleaned_data["client_secret"])
        if commit:
            registration.save()
        return registration


class FolderMappingFormSet(forms.BaseInlineFormSet):
    """Refuse two folders with one role, or one alias twice, before the database does."""

    def clean(self) -> None:
        super().clean()
        roles: set[str] = set()
        aliases: set[str] = set()
        for form in self.forms:
            if not getattr(form, "cleaned_data", None) or form.cleaned_data.get("DELETE"):
                continue
            alias = normalize_alias(form.cleaned_data.get("alias") or "")
            role = form.cleaned_data.get("role") or ""
            if alias in aliases:
                raise forms.ValidationError(gettext("Two folders of this account have the same alias."))
            aliases.add(alias)
            if role and role in roles:
                raise forms.ValidationError(gettext("An account may map at most one folder per role."))
            roles.add(role)

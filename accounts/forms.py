"""Admin forms for mail accounts: the credential is write-only."""

from __future__ import annotations

from django import forms

from accounts.models import MailAccount, normalize_alias


class MailAccountForm(forms.ModelForm):
    credential = forms.CharField(
        label="IMAP password or app password",
        required=False,
        strip=False,
        widget=forms.PasswordInput(render_value=False, attrs={"autocomplete": "new-password"}),
        help_text="Stored encrypted and never shown again. Leave blank to keep the stored one.",
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
            "sync_enabled",
            "sync_mode",
            "poll_interval_seconds",
            "max_message_bytes",
            "storage_ceiling_bytes",
            "answering_audit_enabled",
            "answering_audit_retention_days",
        ]

    # The stored password belongs to the server it was saved for: moving the account to
    # another server must not carry it there (docs/operations/accounts.md).
    SERVER_FIELDS = ("imap_host", "imap_port", "security", "username")

    def clean(self) -> dict:
        cleaned = super().clean() or {}
        if not self.instance.has_credential and not cleaned.get("credential"):
            self.add_error("credential", "A new account needs a credential.")
        elif self.instance.pk and not cleaned.get("credential"):
            moved = [name for name in self.SERVER_FIELDS if name in self.changed_data]
            if moved:
                labels = ", ".join(str(self.fields[name].label).lower() for name in moved)
                self.add_error(
                    "credential",
                    f"Enter the password again: the stored one is sent only to the server it was "
                    f"saved for, and the {labels} changed.",
                )
        return cleaned

    def save(self, commit: bool = True) -> MailAccount:
        account = super().save(commit=False)
        if self.cleaned_data.get("credential"):
            account.set_credential(self.cleaned_data["credential"])
        if commit:
            account.save()
            self.save_m2m()
        return account


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
                raise forms.ValidationError("Two folders of this account have the same alias.")
            aliases.add(alias)
            if role and role in roles:
                raise forms.ValidationError("An account may map at most one folder per role.")
            roles.add(role)

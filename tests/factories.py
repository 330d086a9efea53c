"""factory-boy factories for the models tests build on, plus fixtures that use them."""

from __future__ import annotations

import factory

from accounts.models import FolderMapping, MailAccount, OAuthRegistration, Security


class MailAccountFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = MailAccount

    account_id = factory.Sequence(lambda n: f"account-{n}")
    display_name = factory.Sequence(lambda n: f"Account {n}")
    imap_host = "127.0.0.1"
    imap_port = 143
    security = Security.NONE
    username = factory.Sequence(lambda n: f"user{n}")


class FolderMappingFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = FolderMapping

    account = factory.SubFactory(MailAccountFactory)
    alias = factory.Sequence(lambda n: f"folder-{n}")
    remote_name = factory.LazyAttribute(lambda o: o.alias.upper())
    role = ""
    visible_to_tools = True


def saved_registration(client_secret: str, **fields) -> OAuthRegistration:
    """An OAuthRegistration saved with `fields`; the client secret is stored encrypted, so it
    is set through the model rather than passed as a field."""
    registration = OAuthRegistration(**fields)
    registration.set_client_secret(client_secret)
    registration.save()
    return registration


def _empty_inline(prefix: str) -> dict[str, str]:
    return {
        f"{prefix}-TOTAL_FORMS": "0",
        f"{prefix}-INITIAL_FORMS": "0",
        f"{prefix}-MIN_NUM_FORMS": "0",
        f"{prefix}-MAX_NUM_FORMS": "1000",
    }


def account_form_data(**overrides: str) -> dict[str, str]:
    """What the admin's add-account form posts: an account with Inbox and Sent mapped."""
    data = {
        "account_id": "billing",
        "display_name": "Shared Billing",
        "served": "on",
        "imap_host": "imap.example.org",
        "imap_port": "993",
        "security": "tls",
        "username": "billing@example.org",
        "imap_ca_pem": "",
        "credential": "pa55-word-never-shown",
        "auth_method": "password",
        "sasl_mechanism": "xoauth2",
        "download_bytes_per_day_0": "0",
        "download_bytes_per_day_1": "GB",
        "sync_enabled": "on",
        "sync_mode": "polling",
        "poll_interval_seconds": "300",
        # Sizes are a number and a unit (accounts.forms.ByteSizeField); the model keeps bytes.
        "max_message_bytes_0": "50",
        "max_message_bytes_1": "MB",
        "storage_ceiling_bytes_0": "20",
        "storage_ceiling_bytes_1": "GB",
        "answering_audit_retention_days": "30",
        "mutation_audit_retention_days": "90",
        "access_trail_retention_days": "90",
        "drafting_window_days": "7",
        "drafting_max_per_run": "20",
        "drafting_append_mode": "off",
        **_empty_inline("memberships"),
        **_empty_inline("drafting_signatures"),
        **_empty_inline("drafting_examples"),
        "folders-TOTAL_FORMS": "2",
        "folders-INITIAL_FORMS": "0",
        "folders-MIN_NUM_FORMS": "0",
        "folders-MAX_NUM_FORMS": "1000",
        "folders-0-alias": "Inbox",
        "folders-0-remote_name": "INBOX",
        "folders-0-role": "inbox",
        "folders-0-visible_to_tools": "on",
        "folders-1-alias": "sent",
        "folders-1-remote_name": "Sent Messages",
        "folders-1-role": "sent",
        "folders-1-visible_to_tools": "on",
    }
    data.update(overrides)
    return data

"""Account and folder-mapping invariants, and the credential at rest."""

from __future__ import annotations

import pytest
from cryptography.fernet import Fernet
from django.core.exceptions import ValidationError
from django.db import IntegrityError, connection, transaction

from accounts import crypto
from accounts.models import FolderRole, MailAccount, Security
from mailfathom.core.errors import MailFathomError
from mailfathom.core.hosts import is_loopback_host
from tests.factories import FolderMappingFactory, MailAccountFactory

pytestmark = pytest.mark.django_db


def _stored_credential_column(account: MailAccount) -> str:
    with connection.cursor() as cursor:
        cursor.execute("SELECT credential_encrypted FROM accounts_mailaccount WHERE id = %s", [account.pk])
        return cursor.fetchone()[0]


def test_credential_is_encrypted_at_rest_and_reads_back():
    account = MailAccountFactory()
    account.set_credential("correct horse battery staple")
    account.save()
    stored = _stored_credential_column(account)
    assert "correct horse" not in stored
    assert stored != "correct horse battery staple"
    assert MailAccount.objects.get(pk=account.pk).get_credential() == "correct horse battery staple"


def test_credential_survives_key_rotation(settings):
    account = MailAccountFactory()
    account.set_credential("s3cret")
    account.save()
    old_key = settings.MAILFATHOM_KEYRING
    settings.MAILFATHOM_KEYRING = f"{Fernet.generate_key().decode()},{old_key}"
    assert account.get_credential() == "s3cret"
    rotated = crypto.rotate(account.credential_encrypted)
    settings.MAILFATHOM_KEYRING = settings.MAILFATHOM_KEYRING.split(",")[0]
    assert crypto.decrypt(rotated) == "s3cret"


def test_credential_under_an_unknown_key_is_an_internal_error(settings):
    account = MailAccountFactory()
    account.set_credential("s3cret")
    settings.MAILFATHOM_KEYRING = Fernet.generate_key().decode()
    with pytest.raises(MailFathomError) as caught:
        account.get_credential()
    assert caught.value.code == 81001
    assert not caught.value.is_published
    assert "s3cret" not in str(caught.value)


def test_account_identifier_cannot_change_once_saved():
    account = MailAccountFactory(account_id="billing")
    account.account_id = "renamed"
    with pytest.raises(ValidationError):
        account.full_clean()
    with pytest.raises(ValidationError):
        account.save()
    assert MailAccount.objects.filter(account_id="billing").exists()


def test_display_name_may_not_equal_another_accounts_display_name_or_identifier():
    MailAccountFactory(account_id="billing", display_name="Shared Billing")
    clash_display = MailAccountFactory.build(account_id="other", display_name="shared billing")
    with pytest.raises(ValidationError) as caught:
        clash_display.full_clean()
    assert "display_name" in caught.value.message_dict
    clash_id = MailAccountFactory.build(account_id="other", display_name="BILLING")
    with pytest.raises(ValidationError) as caught:
        clash_id.full_clean()
    assert "display_name" in caught.value.message_dict


def test_identifier_may_not_equal_another_accounts_display_name():
    MailAccountFactory(account_id="billing", display_name="support")
    clash = MailAccountFactory.build(account_id="support", display_name="Support Desk")
    with pytest.raises(ValidationError) as caught:
        clash.full_clean()
    assert "account_id" in caught.value.message_dict


def test_display_names_are_unique_without_regard_to_case_in_the_database():
    MailAccountFactory(display_name="Team")
    with pytest.raises(IntegrityError), transaction.atomic():
        MailAccountFactory(display_name="TEAM")


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost", "::1", "[::1]", "127.0.0.2"])
def test_unencrypted_imap_is_allowed_for_loopback(host):
    assert is_loopback_host(host)
    MailAccountFactory.build(imap_host=host, security=Security.NONE).full_clean()


@pytest.mark.parametrize("host", ["imap.example.org", "10.0.0.1", "localhost.evil.example"])
def test_unencrypted_imap_is_refused_elsewhere(host):
    account = MailAccountFactory.build(imap_host=host, security=Security.NONE)
    with pytest.raises(ValidationError) as caught:
        account.full_clean()
    assert "security" in caught.value.message_dict


def test_audit_retention_is_1_to_3650_days():
    MailAccountFactory.build(answering_audit_retention_days=3650).full_clean()
    for days in (0, 3651):
        with pytest.raises(ValidationError):
            MailAccountFactory.build(answering_audit_retention_days=days).full_clean()
    assert MailAccount._meta.get_field("answering_audit_retention_days").default == 30
    assert MailAccount._meta.get_field("answering_audit_enabled").default is False


def test_alias_is_stored_case_normalized_and_unique_per_account():
    account = MailAccountFactory()
    mapping = FolderMappingFactory(account=account, alias="  Inbox ")
    assert mapping.alias == "inbox"
    with pytest.raises(IntegrityError), transaction.atomic():
        FolderMappingFactory(account=account, alias="INBOX")
    FolderMappingFactory(alias="inbox")  # another account may reuse it


def test_at_most_one_folder_per_role_per_account():
    account = MailAccountFactory()
    FolderMappingFactory(account=account, alias="sent", role=FolderRole.SENT)
    FolderMappingFactory(account=account, alias="plain-a")
    FolderMappingFactory(account=account, alias="plain-b")  # no role: any number
    with pytest.raises(IntegrityError), transaction.atomic():
        FolderMappingFactory(account=account, alias="sent-2", role=FolderRole.SENT)


def test_rotate_credentials_rewrites_every_row_under_the_new_key(settings):
    from django.core.management import call_command

    first = MailAccountFactory()
    first.set_credential("one")
    first.save()
    MailAccountFactory()  # no credential: left alone
    old_key = settings.MAILFATHOM_KEYRING
    new_key = Fernet.generate_key().decode()
    settings.MAILFATHOM_KEYRING = f"{new_key},{old_key}"
    call_command("rotate_credentials", stdout=open("/dev/null", "w"))
    settings.MAILFATHOM_KEYRING = new_key
    first.refresh_from_db()
    assert first.get_credential() == "one"

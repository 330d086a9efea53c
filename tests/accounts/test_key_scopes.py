"""MCP keys limited to accounts: how a limit is set, and how every scope resolution applies it."""

from __future__ import annotations

import time
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.urls import reverse

from accounts.models import FolderRole, McpApiKey
from accounts.services import mcp_keys
from accounts.services.mcp_keys import create_key, forget_verified_keys, limit_key, revoke, verify
from accounts.services.scope import limited_to_accounts, resolve_scope
from mailfathom.core.errors import MailFathomError
from tests.factories import FolderMappingFactory, MailAccountFactory

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _no_remembered_keys():
    forget_verified_keys()
    yield
    forget_verified_keys()


@pytest.fixture
def accounts():
    work = MailAccountFactory(account_id="work", display_name="Work")
    private = MailAccountFactory(account_id="private", display_name="Private")
    for account in (work, private):
        FolderMappingFactory(account=account, alias="inbox", role=FolderRole.INBOX)
    return work, private


def _refusal(**kwargs) -> MailFathomError:
    with pytest.raises(MailFathomError) as caught:
        resolve_scope(**kwargs)
    return caught.value


# --- resolution under a key -----------------------------------------------------------------


def test_a_limited_key_resolves_no_names_to_its_own_accounts_only(accounts):
    work, _ = accounts
    with limited_to_accounts({work.pk}):
        assert resolve_scope().account_ids == ("work",)
    assert resolve_scope().account_ids == ("private", "work")  # the limit ends with the block


def test_an_account_outside_the_key_is_refused_exactly_like_an_unknown_one_with_53001(accounts):
    work, _ = accounts
    with limited_to_accounts({work.pk}):
        outside = _refusal(accounts=["private"])
        by_display_name = _refusal(accounts=["PRIVATE"])
        unknown = _refusal(accounts=["nobody"])
    assert outside.code == by_display_name.code == unknown.code == 53001
    assert outside.message == unknown.message.replace("nobody", "private")


def test_a_key_for_every_account_and_no_key_resolve_alike(accounts):
    with limited_to_accounts(None):
        assert resolve_scope().account_ids == ("private", "work")


def test_a_limited_key_whose_account_was_deleted_reads_nothing(accounts):
    work, private = accounts
    issued = create_key("only work", ["work"])
    work.delete()
    grant = verify(issued.key)
    assert grant is not None and grant.account_pks == frozenset()
    with limited_to_accounts(grant.account_pks):
        assert resolve_scope().account_ids == ()
        assert _refusal(accounts=["private"]).code == 53001


# --- setting the limit ----------------------------------------------------------------------


def test_create_key_limits_to_the_accounts_named(accounts):
    work, _ = accounts
    issued = create_key("agent", ["work", "work"])
    assert issued.record.limited is True
    assert list(issued.record.accounts.all()) == [work]
    assert verify(issued.key).account_pks == frozenset({work.pk})


def test_create_key_without_accounts_reads_every_account(accounts):
    issued = create_key("agent")
    assert issued.record.limited is False
    assert verify(issued.key).account_pks is None


def test_create_key_refuses_an_unknown_account_and_creates_nothing(accounts):
    with pytest.raises(ValueError, match="No account has the identifier\\(s\\): nobody, ghost"):
        create_key("agent", ["work", "nobody", "ghost"])
    assert not McpApiKey.objects.exists()


def test_create_mcp_key_with_accounts_limits_the_key(accounts):
    out, err = StringIO(), StringIO()
    call_command("create_mcp_key", "ci", "--accounts", "work,private", stdout=out, stderr=err)
    grant = verify(out.getvalue().strip())
    assert grant.account_pks == {account.pk for account in accounts}
    assert "reading 2 account(s)" in err.getvalue()


@pytest.mark.parametrize("value", ["work,nobody", "work,,private", " "])
def test_create_mcp_key_refuses_unknown_or_blank_account_ids_clearly(accounts, value):
    with pytest.raises(CommandError) as refused:
        call_command("create_mcp_key", "ci", "--accounts", value, stdout=StringIO(), stderr=StringIO())
    message = str(refused.value)
    assert "nobody" in message if "nobody" in value else "blank" in message
    assert not McpApiKey.objects.exists()


def test_limit_mcp_key_changes_and_lifts_a_limit(accounts):
    work, _ = accounts
    issued = create_key("agent")
    call_command("limit_mcp_key", issued.record.prefix, "--accounts", "work", stdout=StringIO())
    forget_verified_keys()
    assert verify(issued.key).account_pks == frozenset({work.pk})

    call_command("limit_mcp_key", issued.record.prefix + "…", "--all-accounts", stdout=StringIO())
    forget_verified_keys()
    assert verify(issued.key).account_pks is None

    with pytest.raises(CommandError, match="nobody"):
        call_command("limit_mcp_key", issued.record.prefix, "--accounts", "nobody", stdout=StringIO())
    with pytest.raises(CommandError, match="No single MCP API key"):
        call_command("limit_mcp_key", "mfk_missing", "--all-accounts", stdout=StringIO())


def test_limit_key_on_a_missing_key_says_so(accounts):
    assert limit_key(987654, ["work"]) is False


# --- admin ----------------------------------------------------------------------------------


def test_admin_creates_a_key_limited_to_the_accounts_chosen(admin_client, accounts):
    work, _ = accounts
    response = admin_client.post(
        reverse("admin:accounts_mcpapikey_add"), {"name": "desk", "limited": "on", "accounts": [work.pk]}
    )
    assert response.status_code == 200
    stored = McpApiKey.objects.get()
    assert stored.limited is True and list(stored.accounts.all()) == [work]
    page = admin_client.get(reverse("admin:accounts_mcpapikey_changelist")).content.decode()
    assert ">work<" in page


def test_admin_refuses_a_limited_key_with_no_account_and_accounts_without_the_limit(admin_client, accounts):
    work, _ = accounts
    no_account = admin_client.post(reverse("admin:accounts_mcpapikey_add"), {"name": "a", "limited": "on"})
    unticked = admin_client.post(
        reverse("admin:accounts_mcpapikey_add"), {"name": "b", "accounts": [work.pk]}
    )
    assert "Choose at least one account" in no_account.content.decode()
    assert "Tick this to limit the key" in unticked.content.decode()
    assert not McpApiKey.objects.exists()


def test_admin_edits_a_keys_accounts(admin_client, accounts):
    work, private = accounts
    issued = create_key("desk")
    admin_client.post(
        reverse("admin:accounts_mcpapikey_change", args=[issued.record.pk]),
        {"name": "desk", "limited": "on", "accounts": [private.pk]},
    )
    forget_verified_keys()
    assert verify(issued.key).account_pks == frozenset({private.pk})


# --- the verified-key memory ----------------------------------------------------------------


def test_a_revoked_key_is_refused_once_its_verification_is_forgotten(accounts, monkeypatch):
    monkeypatch.setattr(mcp_keys, "_verified", mcp_keys._VerifiedKeys(0.3, 16))
    issued = create_key("leaked")
    assert verify(issued.key) is not None
    revoke(issued.record.pk)
    assert verify(issued.key) is not None  # remembered: the documented few seconds
    time.sleep(0.4)
    assert verify(issued.key) is None


def test_a_wrong_key_is_never_remembered_as_verified(accounts):
    create_key("someone")
    wrong = "mfk_" + "w" * 43
    assert verify(wrong) is None
    assert mcp_keys.recently_verified(wrong) is None


def test_a_wrong_key_sent_again_is_refused_without_a_query(accounts, django_assert_num_queries):
    create_key("someone")
    wrong = "mfk_" + "r" * 43
    assert not mcp_keys.recently_refused(wrong)
    assert verify(wrong) is None
    assert mcp_keys.recently_refused(wrong)
    with django_assert_num_queries(0):
        assert verify(wrong) is None
    issued = create_key("another")
    assert not mcp_keys.recently_refused(issued.key)  # a real key is never marked refused
    assert verify(issued.key) is not None


@pytest.mark.parametrize("token", ["mfk_short", "xyz_" + "w" * 43, "mfk_" + "w" * 44, "", None])
def test_a_token_not_shaped_like_a_key_is_refused_without_a_query(accounts, token, django_assert_num_queries):
    with django_assert_num_queries(0):
        assert verify(token) is None

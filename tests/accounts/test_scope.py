"""Scope resolution: every refusal, both spellings of an account, withheld folders, unserved accounts."""

from __future__ import annotations

import pytest

from accounts.models import FolderRole
from accounts.services.scope import resolve_scope
from mailfathom.core.errors import MailFathomError
from tests.factories import FolderMappingFactory, MailAccountFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def billing():
    account = MailAccountFactory(account_id="billing", display_name="Shared Billing")
    FolderMappingFactory(account=account, alias="inbox", role=FolderRole.INBOX)
    FolderMappingFactory(account=account, alias="spam", role=FolderRole.JUNK)
    FolderMappingFactory(account=account, alias="hr-private", visible_to_tools=False)
    return account


@pytest.fixture
def support():
    account = MailAccountFactory(account_id="support", display_name="Support Desk")
    FolderMappingFactory(account=account, alias="inbox", role=FolderRole.INBOX)
    FolderMappingFactory(account=account, alias="sent", role=FolderRole.SENT)
    return account


def _refusal(**kwargs) -> MailFathomError:
    with pytest.raises(MailFathomError) as caught:
        resolve_scope(**kwargs)
    return caught.value


def _aliases(scope, account_id):
    (account,) = [a for a in scope.accounts if a.account_id == account_id]
    return sorted(folder.alias for folder in account.folders)


def test_no_names_resolves_every_served_account_and_readable_folder(billing, support):
    scope = resolve_scope()
    assert scope.account_ids == ("billing", "support")
    assert _aliases(scope, "billing") == ["inbox", "spam"]
    assert _aliases(scope, "support") == ["inbox", "sent"]


def test_identifier_and_display_name_resolve_to_one_account(billing, support):
    by_id = resolve_scope(accounts=["billing"])
    by_name = resolve_scope(accounts=["shared BILLING"])
    both = resolve_scope(accounts=["billing", "Shared Billing", "billing"])
    assert by_id == by_name == both
    assert both.account_ids == ("billing",)


def test_identifier_is_matched_exactly_not_by_case_or_fragment(billing):
    assert _refusal(accounts=["BILLING"]).code == 53001
    assert _refusal(accounts=["bill"]).code == 53001
    assert _refusal(accounts=["Shared"]).code == 53001


def test_unknown_account_is_53001_naming_it(billing):
    error = _refusal(accounts=["someone-else"])
    assert error.code == 53001
    assert "someone-else" in error.message


def test_unserved_account_is_outside_scope_but_its_rows_remain(billing, support):
    support.served = False
    support.save()
    assert resolve_scope().account_ids == ("billing",)
    assert _refusal(accounts=["support"]).code == 53001
    assert _refusal(accounts=["Support Desk"]).code == 53001
    support.refresh_from_db()
    assert support.folders.count() == 2


def test_folder_hidden_from_tools_is_absent_from_every_scope(billing):
    assert "hr-private" not in _aliases(resolve_scope(), "billing")
    assert _aliases(resolve_scope(folders=["hr-private"]), "billing") == []
    assert _aliases(resolve_scope(accounts=["billing"], folders=["HR-Private", "inbox"]), "billing") == [
        "inbox"
    ]


def test_hidden_folder_role_is_not_carried(billing):
    billing.folders.filter(alias="hr-private").update(role=FolderRole.ARCHIVE)
    assert _refusal(folders=["role:Archive"]).code == 53003


def test_alias_is_case_normalized_and_role_selects_its_folder(billing, support):
    scope = resolve_scope(folders=["INBOX", "role:Sent"])
    assert _aliases(scope, "billing") == ["inbox"]
    assert _aliases(scope, "support") == ["inbox", "sent"]


def test_role_no_folder_in_scope_carries_is_53003(billing, support):
    assert _refusal(accounts=["billing"], folders=["role:Sent"]).code == 53003
    assert _refusal(folders=["role:Drafts"]).code == 53003
    assert _refusal(folders=["role:Nonsense"]).code == 53003


def test_alias_matching_nothing_reads_nothing_without_error(billing):
    scope = resolve_scope(folders=["no-such-folder"])
    assert scope.account_ids == ("billing",)
    assert scope.folder_mapping_ids == ()


@pytest.mark.parametrize("argument", ["accounts", "folders"])
def test_name_of_257_characters_is_51002(billing, argument):
    error = _refusal(**{argument: ["x" * 257]})
    assert error.code == 51002
    assert "256" in error.message
    assert "x" * 20 not in error.message


@pytest.mark.parametrize("argument", ["accounts", "folders"])
def test_name_of_256_characters_is_accepted(billing, argument):
    if argument == "accounts":
        assert _refusal(accounts=["a" * 256]).code == 53001
    else:
        assert resolve_scope(folders=["a" * 256]).folder_mapping_ids == ()


@pytest.mark.parametrize("argument", ["accounts", "folders"])
@pytest.mark.parametrize("name", ["bill\ning", "bill\x00", "\x7fbilling", "bill\u0085ing"])
def test_control_character_is_51002(billing, argument, name):
    error = _refusal(**{argument: [name]})
    assert error.code == 51002
    assert name not in error.message


@pytest.mark.parametrize("argument", ["accounts", "folders"])
@pytest.mark.parametrize("name", ["", "   "])
def test_blank_name_is_51002(billing, argument, name):
    assert _refusal(**{argument: [name]}).code == 51002


@pytest.mark.parametrize("argument", ["accounts", "folders"])
def test_64_names_are_accepted_and_65_refused(billing, argument):
    resolve_scope(**{argument: ["billing"] * 64})
    error = _refusal(**{argument: ["billing"] * 65})
    assert error.code == 51002
    assert "64" in error.message


@pytest.mark.parametrize("argument", ["accounts", "folders"])
def test_oversized_list_is_refused_at_the_element_that_crosses_the_limit(billing, argument):
    consumed = 0

    def endless():
        nonlocal consumed
        while True:
            consumed += 1
            yield "billing"

    assert _refusal(**{argument: endless()}).code == 51002
    assert consumed == 65


def test_bounds_are_checked_in_reading_order(billing):
    # Element 3 is over-long and is reached before the 65th: its refusal is the one reported.
    names = ["billing", "billing", "y" * 300] + ["billing"] * 100
    assert "256" in _refusal(accounts=names).message


def test_bare_string_instead_of_list_is_51002(billing):
    assert _refusal(accounts="billing").code == 51002


def test_account_with_no_mapped_folder_resolves_empty(billing):
    MailAccountFactory(account_id="bare", display_name="Bare")
    scope = resolve_scope(accounts=["bare"])
    assert scope.account_ids == ("bare",)
    assert scope.accounts[0].folders == ()

"""One control-character rule (mailfathom.core.text): C0, DEL and C1 are refused everywhere a
caller names something, and admin cannot store a name no caller could ever type."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError
from django.urls import reverse

from accounts.models import FolderMapping, MailAccount
from accounts.services.scope import resolve_scope
from mailbox.services.bounds import bounded_text
from mailbox.services.selection import MailFilter, validate_filter
from mailfathom.core.errors import FILTER_REFUSED, MailFathomError
from mailfathom.core.text import has_control_character
from tests.factories import FolderMappingFactory, MailAccountFactory, account_form_data
from tests.support import refusals

C1 = ["\x80", "\x85", "\x9f"]  # first, NEL, last


@pytest.mark.parametrize("character", ["\x00", "\t", "\n", "\r", "\x1f", "\x7f", *C1])
def test_c0_del_and_c1_are_control_characters(character):
    assert has_control_character(f"in{character}box")


@pytest.mark.parametrize("character", [" ", "~", "\xa0", "é", "\u2028", "\U0001f4e7"])
def test_printable_text_and_characters_past_c1_are_not(character):
    assert not has_control_character(f"in{character}box")


@pytest.mark.django_db
@pytest.mark.parametrize("character", C1)
def test_an_alias_with_a_c1_control_character_is_refused(character):
    mapping = FolderMappingFactory.build(account=MailAccountFactory(), alias=f"in{character}box")
    with pytest.raises(ValidationError) as caught:
        mapping.full_clean()
    assert caught.value.message_dict["alias"] == ["An alias may not contain control characters."]


@pytest.mark.django_db
@pytest.mark.parametrize("character", ["\x1b", "\x7f", *C1])
def test_a_display_name_with_a_control_character_is_refused(character):
    account = MailAccountFactory.build(display_name=f"Shared{character}Billing")
    with pytest.raises(ValidationError) as caught:
        account.full_clean()
    assert caught.value.message_dict["display_name"] == ["A display name may not contain control characters."]


@pytest.mark.django_db
def test_a_display_name_past_c1_is_accepted():
    assert refusals(MailAccountFactory.build(display_name="Ablage\xa0Müller")) == {}


def _admin_form(alias: str, display_name: str = "Shared Billing") -> dict[str, str]:
    return account_form_data(
        **{"display_name": display_name, "folders-TOTAL_FORMS": "1", "folders-0-alias": alias}
    )


@pytest.mark.django_db
def test_admin_refuses_an_alias_with_a_c1_control_character(admin_client):
    response = admin_client.post(reverse("admin:accounts_mailaccount_add"), _admin_form("in\x85box"))
    assert response.status_code == 200
    assert "An alias may not contain control characters." in response.content.decode()
    assert not MailAccount.objects.exists() and not FolderMapping.objects.exists()


@pytest.mark.django_db
def test_admin_refuses_a_display_name_with_a_c1_control_character(admin_client):
    form = _admin_form("inbox", display_name="Shared\x9fBilling")
    response = admin_client.post(reverse("admin:accounts_mailaccount_add"), form)
    assert response.status_code == 200
    assert "A display name may not contain control characters." in response.content.decode()
    assert not MailAccount.objects.exists()


@pytest.mark.django_db
def test_admin_accepts_the_same_account_without_the_control_character(admin_client):
    response = admin_client.post(reverse("admin:accounts_mailaccount_add"), _admin_form("inbox"))
    assert response.status_code == 302
    assert MailAccount.objects.get().folders.get().alias == "inbox"


@pytest.mark.django_db
@pytest.mark.parametrize("character", C1)
def test_every_caller_facing_check_refuses_a_c1_character_with_51002(character):
    refusals = [
        lambda: resolve_scope(folders=[f"in{character}box"]),
        lambda: validate_filter(MailFilter(subject_fragment=f"in{character}voice")),
        lambda: validate_filter(MailFilter(sender_address=f"al{character}ice@example.org")),
        lambda: bounded_text(f"in{character}voice", maximum=100, argument="queryText"),
    ]
    for refuse in refusals:
        with pytest.raises(MailFathomError) as caught:
            refuse()
        assert caught.value.code == FILTER_REFUSED

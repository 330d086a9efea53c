"""One parser of MAILFATHOM_KEYRING (mailfathom.core.signing.ring) for credentials, signed tokens and
the startup check: comma-separated keys, newest first, spaces and empty entries ignored."""

from __future__ import annotations

import base64

import pytest
from cryptography.fernet import Fernet

from accounts import crypto
from mailfathom.checks import check_secrets
from mailfathom.core import signing

NEWEST = Fernet.generate_key().decode()
OLDER = Fernet.generate_key().decode()


def _ids(messages) -> list[str]:
    return [message.id for message in messages]


def test_the_ring_is_its_keys_in_order_with_spaces_and_empty_entries_dropped(settings):
    settings.MAILFATHOM_KEYRING = f" , {NEWEST} ,, \t{OLDER}\n, "
    assert signing.ring() == [NEWEST, OLDER]


@pytest.mark.parametrize("raw", ["", " ", ",", " , ,, "])
def test_a_ring_of_only_separators_and_spaces_is_empty(settings, raw):
    settings.MAILFATHOM_KEYRING = raw
    assert signing.ring() == []
    assert "mailfathom.E003" in _ids(check_secrets())
    with pytest.raises(RuntimeError):
        signing.sign("cursor", b"payload")
    with pytest.raises(ValueError):
        crypto.encrypt("secret")


def test_credentials_are_encrypted_with_the_newest_key_and_read_with_any(settings):
    settings.MAILFATHOM_KEYRING = f" {OLDER} "
    under_older = crypto.encrypt("older secret")
    settings.MAILFATHOM_KEYRING = f",{NEWEST} , {OLDER},"
    under_newest = crypto.encrypt("newest secret")
    assert Fernet(NEWEST).decrypt(under_newest.encode()) == b"newest secret"
    assert crypto.decrypt(under_older) == "older secret"


def test_tokens_are_signed_with_the_newest_key_and_verified_with_any(settings):
    settings.MAILFATHOM_KEYRING = OLDER
    signed_by_older = signing.sign("cursor", b"page 2")
    settings.MAILFATHOM_KEYRING = f"  {NEWEST},,{OLDER} "
    signed_by_newest = signing.sign("cursor", b"page 3")
    settings.MAILFATHOM_KEYRING = NEWEST
    assert signing.verify("cursor", signed_by_newest) == b"page 3"
    assert signing.verify("cursor", signed_by_older) is None
    settings.MAILFATHOM_KEYRING = f"{NEWEST},{OLDER}"
    assert signing.verify("cursor", signed_by_older) == b"page 2"


def test_the_startup_check_numbers_keys_as_the_ring_lists_them(settings):
    not_a_key = base64.urlsafe_b64encode(b"too short").decode()
    settings.MAILFATHOM_KEYRING = f"{NEWEST}, ,{not_a_key}"
    [problem] = [message for message in check_secrets() if message.id == "mailfathom.E004"]
    assert problem.msg.startswith("MAILFATHOM_KEYRING key 2 ")


def test_a_ring_of_fernet_keys_passes_the_startup_check(settings):
    settings.MAILFATHOM_KEYRING = f" {NEWEST} , {OLDER} "
    assert not {"mailfathom.E003", "mailfathom.E004"} & set(_ids(check_secrets()))

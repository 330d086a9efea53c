"""Singletons built from the settings are forgotten when the settings change, by no one's hand."""

import uuid

import pytest

from answering.ledger import period_ledger
from mailbox.services import search
from mailfathom.providers import get_chat_model, get_embedder


def test_a_changed_setting_forgets_the_embedder_and_the_chat_model(mailfathom_settings):
    mailfathom_settings(embedding_provider="local", chat_provider="openai", chat_model="m")
    embedder, chat = get_embedder(), get_chat_model()
    assert embedder is get_embedder() and chat is get_chat_model()
    mailfathom_settings(chat_alias="renamed")
    assert get_embedder() is not embedder
    assert get_chat_model() is not chat


@pytest.mark.django_db
def test_a_changed_setting_builds_a_new_ledger_over_the_same_shared_count(mailfathom_settings, settings):
    """The ledger object is rebuilt; the count it reads is the deployment's, kept in Redis."""
    settings.PROVIDER_HEALTH_NAMESPACE = f"test-resettable-{uuid.uuid4().hex}"
    ledger = period_ledger()
    ledger.admit()
    assert ledger.spend().runs == 1
    mailfathom_settings(chat_alias="renamed")
    assert period_ledger() is not ledger
    assert period_ledger().spend().runs == 1


def test_a_changed_setting_empties_the_coverage_cache(mailfathom_settings):
    search._coverage_cache[("fingerprint", None)] = (0.0, (1, 2))
    mailfathom_settings(chat_alias="renamed")
    assert search._coverage_cache == {}

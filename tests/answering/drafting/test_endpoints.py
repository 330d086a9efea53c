"""The drafting roles: each unset value falls back to the chat endpoint; their own checks."""

from __future__ import annotations

from answering.drafting.capability import drafting_capability
from answering.drafting.checks import check_drafting_endpoints
from mailfathom.core.capability import CapabilityState
from mailfathom.core.config import DRAFTING_ROLE, UTILITY_ROLE, MailFathomSettings
from tests.configure import configure

CHAT = MailFathomSettings().replace(
    chat_provider="openai",
    chat_alias="chat",
    chat_base_url="http://127.0.0.1:9/v1",
    chat_model="m",
    chat_api_key="k",
)


def test_unset_drafting_values_are_the_chat_endpoints():
    for role in (UTILITY_ROLE, DRAFTING_ROLE):
        endpoint = CHAT.chat_endpoint(role)
        assert (endpoint.provider, endpoint.alias, endpoint.base_url, endpoint.model, endpoint.api_key) == (
            "openai",
            "chat",
            "http://127.0.0.1:9/v1",
            "m",
            "k",
        )
    assert CHAT.chat_endpoint(UTILITY_ROLE).temperature == 0.0
    assert CHAT.chat_endpoint(DRAFTING_ROLE).max_output_tokens == 800
    assert CHAT.endpoint(DRAFTING_ROLE).timeout_seconds == CHAT.chat_timeout_seconds


def test_each_role_takes_its_own_values_where_set():
    values = CHAT.replace(drafting_utility_model="small", drafting_provider="none", drafting_api="responses")
    assert values.chat_endpoint(UTILITY_ROLE).model == "small"
    assert values.chat_endpoint(DRAFTING_ROLE).provider == "none"
    assert values.chat_endpoint(DRAFTING_ROLE).api == "responses"
    assert values.chat_endpoint("chat").model == "m"


def test_drafting_is_inactive_without_an_endpoint_and_available_with_the_chat_one(settings):
    assert drafting_capability().state == CapabilityState.INACTIVE
    configure(
        settings, **{name: getattr(CHAT, name) for name in ("chat_provider", "chat_model", "chat_base_url")}
    )
    assert drafting_capability().state == CapabilityState.AVAILABLE
    configure(settings, drafting_utility_provider="none")
    assert drafting_capability().state == CapabilityState.INACTIVE


def test_a_drafting_endpoint_setting_that_does_not_fit_is_refused_at_startup(settings):
    configure(settings, chat_provider="openai", chat_model="m", drafting_base_url="ftp://x")

    (error,) = check_drafting_endpoints()

    assert error.id == "mailfathom.E031" and "MAILFATHOM_DRAFTING_BASE_URL" in error.msg

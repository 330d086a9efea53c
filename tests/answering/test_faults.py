"""Provider faults put through the ask_mail use case: every question ends answered or classified.

The scripted server fails the way real endpoints do (throttling with Retry-After, 5xx, a
hang, a trickle, a refused connection, a body that is not JSON, a tool call cut off, an
empty reply) and the question must end in an answer or in exactly one of the provider codes
71001, 72001 or 73001, within the call's deadline. Deadlines are small so the file is fast.
"""

from __future__ import annotations

import time
from types import SimpleNamespace

import pytest

from answering import capability as capability_module
from answering.capability import WITHHOLD_SECONDS
from answering.ledger import SPEND_REFUSED
from answering.services.question import ask_mail
from mailfathom.core.config import CHAT_APIS
from mailfathom.core.errors import MailFathomError
from mailfathom.providers import get_chat_model, health
from mailfathom.providers.errors import CIRCUIT_OPEN, ProviderError
from mailfathom.providers.resilience import CLOSED
from tests.answering.fixtures import chat_endpoint, chat_script
from tests.answering.support import parse_xml, turns_of
from tests.configure import configure
from tests.providers.openai_server import (
    empty,
    hang,
    malformed,
    status,
    text,
    tool_calls,
    trickle,
    truncated_tool_call,
)
from tests.support import free_port as closed_port

pytestmark = pytest.mark.django_db

QUESTION = "What did the insurer finally agree to pay?"
ANSWER = "The insurer agreed to pay 2,300 euros."
ONE_API = pytest.mark.parametrize("chat_api", ["chat-completions"], indirect=True)
BOTH_APIS = pytest.mark.parametrize("chat_api", CHAT_APIS, indirect=True)


def provider_failure(code: int) -> ProviderError:
    """Ask QUESTION and return the ProviderError it ended with, which must carry `code`."""
    with pytest.raises(ProviderError) as caught:
        ask_mail(QUESTION)
    assert caught.value.code == code, caught.value
    return caught.value


def sent(server, chat_api: str) -> int:
    return len(server.recorded(chat_endpoint(chat_api)))


def chat_failures() -> int:
    return health.read_health("chat", configured=True).consecutive_failures


# --- throttling and server errors: retried within the budget -------------------------------------


@ONE_API
def test_429_waits_for_its_retry_after_and_the_question_is_answered(world, settings, answering, chat_api):
    world()
    configure(settings, chat_max_retries=2)
    chat_script(answering, chat_api).script(status(429, retry_after="1"), text(ANSWER))

    assert ask_mail(QUESTION).answer == ANSWER

    first, second = answering.recorded(chat_endpoint(chat_api))
    assert second.at - first.at >= 0.95
    assert chat_failures() == 0


@ONE_API
def test_a_retry_after_beyond_the_deadline_is_not_waited_for(world, settings, answering, chat_api):
    world()
    configure(settings, chat_max_retries=2, chat_timeout_seconds=2)
    chat_script(answering, chat_api).script(status(429, retry_after="30"))

    started = time.monotonic()
    provider_failure(72001)

    assert time.monotonic() - started < 1.5
    assert sent(answering, chat_api) == 1


@ONE_API
def test_429_on_every_attempt_is_72001(world, settings, answering, chat_api):
    world()
    configure(settings, chat_max_retries=1)
    chat_script(answering, chat_api).script(status(429, retry_after="0"), status(429, retry_after="0"))

    provider_failure(72001)

    assert sent(answering, chat_api) == 2
    assert chat_failures() == 1  # one failed call, however many attempts it made


@ONE_API
@pytest.mark.parametrize("code", [500, 503])
def test_a_server_error_then_success_is_answered(world, settings, answering, chat_api, code):
    world()
    configure(settings, chat_max_retries=1)
    chat_script(answering, chat_api).script(status(code), text(ANSWER))

    assert ask_mail(QUESTION).answer == ANSWER
    assert sent(answering, chat_api) == 2


@ONE_API
@pytest.mark.parametrize("code", [500, 503])
def test_server_errors_past_the_retries_are_72001_after_a_bounded_number_of_attempts(
    world, settings, answering, chat_api, code
):
    world()
    configure(settings, chat_max_retries=1)
    chat_script(answering, chat_api).script(status(code), status(code))  # then: an answer, never asked for

    provider_failure(72001)

    assert sent(answering, chat_api) == 2


@ONE_API
@pytest.mark.parametrize("code", [401, 403])
def test_a_refused_credential_is_71001_and_not_retried(world, settings, answering, chat_api, code):
    world()
    configure(settings, chat_max_retries=2)
    chat_script(answering, chat_api).script(status(code))

    provider_failure(71001)

    assert sent(answering, chat_api) == 1


@ONE_API
def test_a_failure_after_a_lookup_ends_the_question_with_its_code(world, settings, answering, chat_api):
    world()
    chat_script(answering, chat_api).script(
        tool_calls(("search_mail", {"queryText": "insurer"})), status(503)
    )

    provider_failure(72001)

    assert sent(answering, chat_api) == 2


# --- deadlines ------------------------------------------------------------------------------------

DEADLINE = 2


@ONE_API
@pytest.mark.parametrize(
    "behaviour",
    [hang(10), trickle(text(ANSWER), chunk_seconds=0.5, chunks=10)],
    ids=["read-timeout", "trickle"],
)
def test_a_reply_that_does_not_arrive_in_time_is_72001_within_the_deadline(
    world, settings, answering, chat_api, behaviour
):
    world()
    configure(settings, chat_timeout_seconds=DEADLINE, chat_max_retries=2)
    chat_script(answering, chat_api).script(behaviour, behaviour, behaviour)

    started = time.monotonic()
    error = provider_failure(72001)

    assert time.monotonic() - started < DEADLINE + 2
    assert error.kind == "timeout"
    assert chat_failures() == 1


@ONE_API
def test_a_refused_connection_is_72001(world, settings, answering, chat_api):
    world()
    configure(settings, chat_base_url=f"http://127.0.0.1:{closed_port()}/v1", chat_max_retries=1)

    started = time.monotonic()
    error = provider_failure(72001)

    assert time.monotonic() - started < DEADLINE
    assert error.kind == "unavailable"


# --- replies that are no use ----------------------------------------------------------------------


@BOTH_APIS
def test_a_body_that_is_not_json_is_73001_and_not_retried(world, settings, answering, chat_api):
    world()
    configure(settings, chat_max_retries=2)
    chat_script(answering, chat_api).script(malformed())

    provider_failure(73001)

    assert sent(answering, chat_api) == 1


@ONE_API
def test_an_empty_reply_is_73001_and_not_retried(world, settings, answering, chat_api):
    world()
    configure(settings, chat_max_retries=2)
    chat_script(answering, chat_api).script(empty())

    provider_failure(73001)

    assert sent(answering, chat_api) == 1


@BOTH_APIS
def test_a_tool_call_cut_off_is_refused_by_argument_and_the_model_goes_on_to_answer(
    world, answering, chat_api
):
    world()
    chat_script(answering, chat_api).script(truncated_tool_call("search_mail"), text(ANSWER))

    result = ask_mail(QUESTION)

    assert result.answer == ANSWER and result.citations == []
    requests = answering.recorded(chat_endpoint(chat_api))
    assert len(requests) == 2
    _instruction, turns, _tools = turns_of(requests[-1].body)
    assert [turn.role for turn in turns] == ["user", "assistant", "tool"]
    assert turns[1].calls == (("search_mail", '{"query": "invoice from Mü'),)  # as the model wrote it
    refusal = parse_xml(turns[2].content)
    assert refusal.tag == "search-refused"
    assert (refusal.attrib["argument"], refusal.attrib["code"]) == ("arguments", "51002")


# --- the circuit ----------------------------------------------------------------------------------


@ONE_API
def test_the_circuit_opens_after_consecutive_failed_questions_and_the_next_fails_fast(
    world, settings, answering, chat_api, monkeypatch
):
    """A failure withholds answering for a minute (56001), so the capability's clock is moved on
    past each minute; the circuit's own clock is not, so it stays open."""
    world()
    configure(settings, chat_circuit_failures=2, chat_max_retries=0)
    chat_script(answering, chat_api).script(status(503), status(503))  # then: answers, never reached
    clock = {"offset": 0.0}
    monkeypatch.setattr(
        capability_module, "time", SimpleNamespace(time=lambda: time.time() + clock["offset"])
    )

    provider_failure(72001)
    with pytest.raises(MailFathomError) as withheld:
        ask_mail(QUESTION)
    assert withheld.value.code == 56001  # within the minute: the question is not let through
    clock["offset"] += WITHHOLD_SECONDS + 1
    provider_failure(72001)  # the second consecutive failure opens the circuit
    assert get_chat_model().resilience.circuit.state != CLOSED
    clock["offset"] += WITHHOLD_SECONDS + 1

    started = time.monotonic()
    error = provider_failure(72001)

    assert error.kind == CIRCUIT_OPEN
    assert time.monotonic() - started < 1
    assert sent(answering, chat_api) == 2  # the third question reached no server
    assert chat_failures() == 2  # and MailFathom's own refusal is not recorded against the provider


@ONE_API
@pytest.mark.parametrize(
    ("limit", "reply"),
    [
        ({"answering_max_provider_calls_per_run": 1}, tool_calls(("search_mail", {"queryText": "insurer"}))),
        (
            {"answering_max_tokens_per_run": 1000},
            tool_calls(("search_mail", {"queryText": "insurer"}), usage=(900, 200)),
        ),
    ],
    ids=["calls", "tokens"],
)
def test_a_run_ceiling_leaves_the_chat_health_and_circuit_untouched(
    world, settings, answering, chat_api, limit, reply
):
    world()
    configure(settings, chat_circuit_failures=1, **limit)
    chat_script(answering, chat_api).script(reply, text(ANSWER))

    with pytest.raises(MailFathomError) as stopped:
        ask_mail(QUESTION)

    assert stopped.value.code == SPEND_REFUSED and not isinstance(stopped.value, ProviderError)
    record = health.read_health("chat", configured=True)
    assert (record.consecutive_failures, record.last_failure_at) == (0, None)
    assert get_chat_model().resilience.circuit.state == CLOSED
    # A circuit that opens after one failure would refuse this; it is answered.
    assert ask_mail(QUESTION).answer == ANSWER

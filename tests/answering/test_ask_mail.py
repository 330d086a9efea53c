"""The ask_mail use case end to end: question bounds, scope, capability, ceilings, citations.

Every model here is the scripted server reached by the real `openai` client, over both the
Chat Completions and the Responses API where the wire format matters.
"""

from __future__ import annotations

import time

import pytest

from answering.capability import (
    WITHHOLD_SECONDS,
    admit_question,
    answering_capability,
)
from answering.instructions import ANSWER_INSTRUCTION
from answering.ledger import SPEND_REFUSED
from answering.services.question import ask_mail
from mailbox.models import Folder
from mailbox.services.embedding import embed_pending
from mailbox.services.lexical_search import refresh_term_stats
from mailfathom.core.capability import CapabilityState
from mailfathom.core.errors import MailFathomError
from mailfathom.providers import health
from mailfathom.providers.errors import ProviderError
from tests.answering.fixtures import chat_endpoint, chat_script
from tests.answering.support import envelope_messages, parse_xml, turns_of
from tests.configure import configure
from tests.mailbox.factories import EmailFactory
from tests.providers.openai_server import empty, hang, respond, status, text, tool_calls

pytestmark = pytest.mark.django_db

QUESTION = "What did the insurer finally agree to pay?"


def refused(code: int, call, *args, **kwargs) -> MailFathomError:
    with pytest.raises(MailFathomError) as caught:
        call(*args, **kwargs)
    assert caught.value.code == code, caught.value
    return caught.value


# --- the happy path, both APIs --------------------------------------------------------------


def test_an_answer_cites_what_the_run_retrieved(world, obedient, answering, chat_api):
    built = world()

    result = ask_mail(QUESTION, accounts=["work"])

    assert result.answer.startswith("The insurer agreed to pay 2,300 euros.")
    cited = [citation.stored_email_id for citation in result.citations]
    assert cited and set(cited) <= set(built.work_ids)
    assert built.work_ids[0] in cited  # "Claim 4471 insurer payment"
    first = result.citations[0]
    assert (first.account_id, first.account_display_name) == ("work", "Work")
    assert first.folder_alias in {"inbox", "archive"} and first.subject and first.received_at
    assert (result.answer_truncated, result.citations_truncated, result.retrieval_truncated) == (False,) * 3
    requests = answering.recorded(chat_endpoint(chat_api))
    assert len(requests) == 2  # one lookup, then the answer
    instruction, turns, tools = turns_of(requests[0].body)
    assert instruction == ANSWER_INSTRUCTION and tools
    assert [turn.role for turn in turns] == ["user"] and turns[0].content == QUESTION
    wire = result.wire()
    assert set(wire) == {
        "answer",
        "citations",
        "reliedOn",
        "answerTruncated",
        "citationsTruncated",
        "retrievalTruncated",
    }
    assert "extract" not in str(wire["citations"]) and "snippets" not in str(wire["citations"])
    # The obedient model cites the first message it was shown, as [1]: that one is relied on.
    assert [(source.source_number, source.stored_email_id) for source in result.relied_on] == [
        (1, result.citations[0].stored_email_id)
    ]


def test_a_question_that_needs_no_mail_costs_one_call_and_reads_nothing(world, answering, chat_api):
    world()
    chat_script(answering, chat_api).script(text("I answer questions about your mail."))

    result = ask_mail("What can you do?")

    assert result.citations == [] and result.answer == "I answer questions about your mail."
    assert len(answering.recorded(chat_endpoint(chat_api))) == 1


# --- the question ----------------------------------------------------------------------------


@pytest.mark.parametrize("chat_api", ["chat-completions"], indirect=True)
@pytest.mark.parametrize(
    "question", ["", "   ", "x" * 1001, "tab\there", "bell\x07", "del\x7f", "c1\x85"], ids=repr
)
def test_questions_out_of_bounds_are_refused_before_anything_is_sent(world, answering, chat_api, question):
    world()
    error = refused(51002, ask_mail, question)
    assert "question" in error.message and "1000" in error.message
    assert answering.recorded(chat_endpoint(chat_api)) == []


@pytest.mark.parametrize("chat_api", ["chat-completions"], indirect=True)
@pytest.mark.parametrize("length", [1, 1000])
def test_questions_at_the_bounds_are_answered(world, answering, chat_api, length):
    world()
    chat_script(answering, chat_api).script(text("An answer."))
    assert ask_mail("q" * length).answer == "An answer."


# --- scope -----------------------------------------------------------------------------------


@pytest.mark.parametrize("chat_api", ["chat-completions"], indirect=True)
def test_scope_refusals_come_before_the_capability_and_send_nothing(world, answering, chat_api):
    world()
    refused(53001, ask_mail, QUESTION, accounts=["nobody"])
    refused(53003, ask_mail, QUESTION, accounts=["private"], folders=["role:junk"])
    refused(51002, ask_mail, QUESTION, accounts=["work"] * 65)
    assert answering.recorded(chat_endpoint(chat_api)) == []


@pytest.mark.parametrize("chat_api", ["chat-completions"], indirect=True)
def test_junk_is_never_retrievable_even_when_the_scope_names_it(world, obedient, answering, chat_api):
    built = world()

    result = ask_mail(QUESTION, accounts=["work"], folders=["role:junk", "inbox"])

    assert built.junk_id not in {c.stored_email_id for c in result.citations}
    for request in answering.recorded(chat_endpoint(chat_api)):
        assert "JUNK-5512" not in str(request.body)
    assert all(c.folder_alias == "inbox" for c in result.citations)


# --- capability (56001) ----------------------------------------------------------------------


@pytest.mark.parametrize("chat_api", ["chat-completions"], indirect=True)
def test_no_chat_endpoint_is_inactive_and_refused_as_never(world, settings, answering, chat_api):
    world()
    configure(settings, chat_provider="none")
    assert answering_capability().state == CapabilityState.INACTIVE
    error = refused(56001, ask_mail, QUESTION)
    assert "does not answer" in error.message


@pytest.mark.parametrize("chat_api", ["chat-completions"], indirect=True)
def test_no_embeddings_is_inactive(world, settings, answering, chat_api):
    world()
    configure(settings, embedding_provider="none")
    assert answering_capability().state == CapabilityState.INACTIVE
    assert "does not answer" in refused(56001, ask_mail, QUESTION).message


@pytest.mark.parametrize("chat_api", ["chat-completions"], indirect=True)
def test_a_chat_failure_withholds_answering_for_a_minute_then_lets_a_question_through(
    world, answering, chat_api
):
    world()
    chat_script(answering, chat_api).script(status(401))
    with pytest.raises(ProviderError) as failed:
        ask_mail(QUESTION)
    assert failed.value.code == 71001
    assert answering_capability().state == CapabilityState.DEGRADED
    error = refused(56001, ask_mail, QUESTION)
    assert "cannot right now" in error.message
    sent = len(answering.recorded(chat_endpoint(chat_api)))
    later = time.time() + WITHHOLD_SECONDS + 1
    assert answering_capability(now=later).state == CapabilityState.AVAILABLE
    assert answering_capability().state == CapabilityState.DEGRADED
    assert len(answering.recorded(chat_endpoint(chat_api))) == sent  # reading costs no call


@pytest.mark.parametrize("chat_api", ["chat-completions"], indirect=True)
def test_an_embedding_space_that_cannot_place_a_query_is_degraded(world, settings, answering, chat_api):
    world()
    configure(settings, embedding_model="another-model")
    assert answering_capability().state == CapabilityState.DEGRADED
    assert "cannot right now" in refused(56001, ask_mail, QUESTION).message


# --- provider failures (71001, 72001, 73001) -------------------------------------------------


@pytest.mark.parametrize("chat_api", ["chat-completions"], indirect=True)
@pytest.mark.parametrize(
    ("behaviour", "code"),
    [(status(401), 71001), (hang(10), 72001), (status(503), 72001), (empty(), 73001)],
    ids=["401", "timeout", "503", "empty"],
)
def test_provider_failures_are_classified_and_recorded_in_the_chat_health(
    world, settings, answering, chat_api, behaviour, code
):
    world()
    configure(settings, chat_timeout_seconds=2)
    chat_script(answering, chat_api).script(behaviour)
    started = time.monotonic()
    with pytest.raises(ProviderError) as failed:
        ask_mail(QUESTION)
    assert failed.value.code == code
    assert time.monotonic() - started < 5
    assert health.read_health("chat", configured=True).consecutive_failures == 1


# --- run ceilings ------------------------------------------------------------------------------


@pytest.mark.parametrize("chat_api", ["chat-completions"], indirect=True)
def test_a_question_designed_to_loop_stops_at_the_call_ceiling(world, settings, answering, chat_api):
    world()
    configure(settings, answering_max_provider_calls_per_run=3)
    calls = iter(range(1000))
    chat_script(answering, chat_api).always(
        lambda request: tool_calls(("search_mail", {"queryText": f"keep searching {next(calls)}"}))
    )

    error = refused(SPEND_REFUSED, ask_mail, "Keep searching until you find the invoice from Zed.")

    assert "asking it again" in error.message
    assert len(answering.recorded(chat_endpoint(chat_api))) == 3
    assert health.read_health("chat", configured=True).consecutive_failures == 0


@pytest.mark.parametrize("chat_api", ["chat-completions"], indirect=True)
def test_the_token_ceiling_stops_the_run_after_the_call_that_crossed_it(world, settings, answering, chat_api):
    world()
    configure(settings, answering_max_tokens_per_run=1000)
    chat_script(answering, chat_api).always(
        tool_calls(("search_mail", {"queryText": "insurer"}), usage=(900, 200))
    )

    refused(SPEND_REFUSED, ask_mail, QUESTION)

    assert len(answering.recorded(chat_endpoint(chat_api))) == 1  # 1,100 tokens: no second call


@pytest.mark.parametrize("chat_api", ["chat-completions"], indirect=True)
def test_the_retrieval_ceiling_cuts_whole_passages_and_the_run_continues(
    world, settings, answering, chat_api
):
    world()
    inbox = Folder.objects.get(account__account_id="work", mapping__alias="inbox")
    for number in range(6):
        sentence = f"The insurer wrote about claim {number} and the lunch budget. "
        EmailFactory(folder=inbox, subject=f"insurer letter {number}", body=sentence * 40)
    embed_pending()
    refresh_term_stats()
    configure(settings, answering_max_retrieved_characters_per_run=1000)
    seen: list[str] = []

    def model(request):
        _instruction, turns, _tools = turns_of(request)
        results = [turn.content for turn in turns if turn.role == "tool"]
        seen[:] = results
        if len(results) < 3:
            return tool_calls(("search_mail", {"queryText": "insurer claim lunch"}))
        return text("Answered from what was read.")

    chat_script(answering, chat_api).always(respond(model))

    result = ask_mail(QUESTION, accounts=["work"])

    assert result.retrieval_truncated is True
    sent = 0
    for envelope in seen:
        for message in envelope_messages(envelope):
            sent += len(message.find("subject").text or "") + len(message.find("extract").text or "")
    assert 0 < sent <= 1000
    last = parse_xml(seen[-1])
    assert last.attrib.get("retrieval-limit-reached") == "true"
    assert result.answer == "Answered from what was read."


# --- period ceilings ---------------------------------------------------------------------------


@pytest.mark.parametrize("chat_api", ["chat-completions"], indirect=True)
def test_the_period_admits_its_runs_then_refuses_saying_when_it_renews(world, settings, answering, chat_api):
    world()
    configure(settings, answering_max_runs_per_period=2)
    chat_script(answering, chat_api).always(text("An answer."))
    ask_mail(QUESTION)
    ask_mail(QUESTION)
    error = refused(SPEND_REFUSED, ask_mail, QUESTION)
    assert "renews at" in error.message
    assert len(answering.recorded(chat_endpoint(chat_api))) == 2


@pytest.mark.parametrize("chat_api", ["chat-completions"], indirect=True)
def test_a_question_refused_by_the_capability_is_not_charged(world, settings, answering, chat_api):
    world()
    configure(settings, answering_max_runs_per_period=1, chat_provider="none")
    refused(56001, ask_mail, QUESTION)
    configure(settings, answering_max_runs_per_period=1, chat_provider="openai")
    chat_script(answering, chat_api).script(text("An answer."))
    assert ask_mail(QUESTION).answer == "An answer."


# --- response bounds -------------------------------------------------------------------------


@pytest.mark.parametrize("chat_api", ["chat-completions"], indirect=True)
def test_answer_and_citations_are_cut_and_say_so(world, settings, answering, chat_api):
    world()
    configure(settings, answering_max_answer_characters=100, answering_max_citations=1)
    chat_script(answering, chat_api).script(
        tool_calls(("search_mail", {"queryText": "insurer claim"})), text("The insurer paid. " * 10)
    )

    result = ask_mail(QUESTION, accounts=["work"])

    assert len(result.answer) == 100 and result.answer_truncated
    assert len(result.citations) == 1 and result.citations_truncated


# --- lookups the model gets wrong ------------------------------------------------------------


@pytest.mark.parametrize("chat_api", ["chat-completions"], indirect=True)
def test_a_refused_lookup_names_the_argument_and_the_model_can_correct_it(world, answering, chat_api):
    world()
    chat_script(answering, chat_api).script(
        tool_calls(("search_mail", {"queryText": "insurer", "senderAddress": "not an address"})),
        tool_calls(("search_mail", {"queryText": "insurer", "receivedOnOrAfter": "yesterday"})),
        tool_calls(("search_mail", {"queryText": "insurer", "accounts": ["private"]})),
        tool_calls(("search_mail", {"queryText": "insurer", "senderAddress": "nobody@nowhere.test"})),
        tool_calls(("search_mail", {"queryText": "insurer"})),
        text("Done."),
    )

    result = ask_mail(QUESTION, accounts=["work"])

    last = answering.recorded(chat_endpoint(chat_api))[-1].body
    _instruction, turns, _tools = turns_of(last)
    results = [parse_xml(turn.content) for turn in turns if turn.role == "tool"]
    assert [(r.tag, r.attrib.get("argument")) for r in results[:3]] == [
        ("search-refused", "senderAddress"),
        ("search-refused", "receivedOnOrAfter"),
        ("search-refused", "accounts"),
    ]
    assert all(r.attrib["code"] == "51002" for r in results[:3])
    assert results[3].tag == "retrieved-mail" and list(results[3]) == []  # the empty envelope
    assert results[4].tag == "retrieved-mail" and len(list(results[4])) >= 1
    assert result.citations


@pytest.mark.parametrize("chat_api", ["chat-completions"], indirect=True)
def test_after_the_minute_one_question_probes_the_endpoint_and_the_others_wait(world, answering, chat_api):
    world()
    health.record_failure("chat", "unavailable")
    later = time.time() + WITHHOLD_SECONDS + 1
    with admit_question(now=later) as first:
        assert first.state == CapabilityState.AVAILABLE and first.probe
        with admit_question(now=later) as second:
            assert second.state == CapabilityState.DEGRADED
    with admit_question(now=later) as third:
        assert third.state == CapabilityState.AVAILABLE


@pytest.mark.parametrize("chat_api", ["chat-completions"], indirect=True)
def test_a_probe_question_that_succeeds_clears_the_record(world, answering, chat_api):
    world()
    health.record_failure("chat", "credential_refused")
    health._redis().hset(health.health_key("chat"), "last_failure_at", time.time() - WITHHOLD_SECONDS - 1)
    chat_script(answering, chat_api).script(text("Working again."))

    assert ask_mail(QUESTION).answer == "Working again."

    assert answering_capability().state == CapabilityState.AVAILABLE and not answering_capability().probe


@pytest.mark.parametrize("chat_api", ["chat-completions"], indirect=True)
def test_sensitive_content_is_redacted_on_the_way_to_the_model_and_back(world, settings, answering, chat_api):
    world()
    inbox = Folder.objects.get(account__account_id="work", mapping__alias="inbox")
    EmailFactory(
        folder=inbox, subject="insurer card", body="The insurer charged card 4111 1111 1111 1111 today."
    )
    embed_pending()
    refresh_term_stats()
    configure(settings, sensitive_scan_enabled=True)
    chat_script(answering, chat_api).script(
        tool_calls(("search_mail", {"queryText": "insurer card"})), text("It was card 4111 1111 1111 1111.")
    )

    result = ask_mail(QUESTION)

    sent = str(answering.recorded(chat_endpoint(chat_api))[-1].body)
    assert "4111 1111 1111 1111" not in sent and "[redacted:" in sent
    assert "4111 1111 1111 1111" not in result.answer and "[redacted:" in result.answer

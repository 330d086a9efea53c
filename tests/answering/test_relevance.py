"""The optional second pass: strict scores, every row of the failure table, and a whole run.

Each judgement goes to the scripted server through the real `openai` client and the
resilient chat model a run uses (docs/operations/answering.md, The relevance pass): every
failure keeps the passage. The wire format does not matter here, so Chat Completions is enough.
"""

from __future__ import annotations

import threading
import time
from datetime import UTC, datetime

import pytest

from answering.instructions import RELEVANCE_INSTRUCTION
from answering.lookup import Lookup
from answering.relevance import (
    ALLOWANCE_SPENT,
    JUDGEMENT_FAILED,
    NOT_A_SCORE,
    PROVIDER_UNAVAILABLE,
    RelevanceOutcome,
    RelevanceSettings,
    filter_passages,
    strict_score,
)
from answering.services.question import ask_mail
from mailbox.models import Folder
from mailbox.services.embedding import embed_pending
from mailbox.services.lexical_search import refresh_term_stats
from mailbox.services.passages import Passage, retrieve_passages
from mailbox.services.selection import MailFilter
from mailfathom.providers import get_chat_model, health
from tests.answering.support import envelope_messages, parse_xml, turns_of
from tests.configure import configure
from tests.mailbox.factories import EmailFactory
from tests.providers.openai_server import (
    Behaviour,
    empty,
    hang,
    malformed,
    respond,
    status,
    text,
    tool_calls,
)
from tests.support import free_port

ENDPOINT = "chat/completions"
QUESTION = "What did the insurer finally agree to pay?"
LOOKUP = Lookup(query_text="insurer payment", mail_filter=MailFilter(subject_fragment="Claim 4471"))
ONE_API = pytest.mark.parametrize("chat_api", ["chat-completions"], indirect=True)


# --- strict_score ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("reply", "score"),
    [("42", 42), (" 42\n", 42), ("0", 0), ("100", 100), ("\t7 ", 7)],
    ids=repr,
)
def test_a_bare_whole_number_is_a_score(reply, score):
    assert strict_score(reply) == score


@pytest.mark.parametrize(
    "reply",
    ["42%", "Score: 42", "```42```", "42.0", "-1", "101", "forty", "", "   ", "4 2", "+42", "42/100", "1e1"],
    ids=repr,
)
def test_anything_around_the_number_is_not_a_score(reply):
    assert strict_score(reply) is None


# --- the pass against the scripted server ------------------------------------------------------


def _passage(number: int) -> Passage:
    return Passage(
        stored_email_id=f"019fe12f-a4a1-7759-8d95-00000000000{number}",
        account_id="work",
        account_display_name="Work",
        folder_alias="inbox",
        subject=f"Claim 4471 letter {number}",
        received_at=datetime(2026, 8, 1, tzinfo=UTC),
        extract=f"Letter {number} about the insurer payment for claim 4471.",
    )


PASSAGES = [_passage(number) for number in range(4)]


def _judged_id(body: dict) -> str:
    """The one candidate a judgement request carries."""
    _instruction, turns, _tools = turns_of(body)
    (turn,) = turns
    (message,) = envelope_messages(turn.content[turn.content.index("<retrieved-mail") :])
    return message.attrib["id"]


def judged(server) -> list[str]:
    """The candidate of every judgement the server received, in arrival order."""
    return [_judged_id(request.body) for request in server.recorded(ENDPOINT)]


def judge(replies: dict[int, Behaviour], default: Behaviour | None = None):
    """A scripted judge answering each candidate (by its number) with its behaviour."""
    by_id = {PASSAGES[number].stored_email_id: behaviour for number, behaviour in replies.items()}

    def reply(request: dict) -> Behaviour:
        return by_id.get(_judged_id(request), default or text("90"))

    return respond(reply)


def run_pass(
    passages=PASSAGES, *, threshold: int = 50, max_candidates: int = 20, may_spend=lambda: True
) -> tuple[RelevanceOutcome, list[int]]:
    charged: list[int] = []
    outcome = filter_passages(
        get_chat_model(),
        LOOKUP,
        "hybrid",
        passages,
        RelevanceSettings(threshold=threshold, max_candidates=max_candidates),
        may_spend=may_spend,
        charge=charged.append,
    )
    return outcome, charged


def ids(passages) -> list[str]:
    return [passage.stored_email_id for passage in passages]


@ONE_API
def test_no_candidates_sends_nothing(answering, chat_api):
    assert run_pass([])[0] == RelevanceOutcome((), 0, 0, None)
    assert answering.recorded(ENDPOINT) == []


@ONE_API
@pytest.mark.parametrize("kind", ["unavailable", "credential_refused", "timeout"])
def test_after_a_failed_chat_call_nothing_is_judged_and_the_ranking_stands(answering, chat_api, kind):
    health.record_failure("chat", kind)

    outcome, charged = run_pass()

    assert outcome == RelevanceOutcome(tuple(PASSAGES), 0, 0, PROVIDER_UNAVAILABLE)
    assert answering.recorded(ENDPOINT) == [] and charged == []


@ONE_API
@pytest.mark.parametrize(
    "failure",
    [hang(5), status(429, retry_after="1"), status(401), status(403), status(400), status(503)],
    ids=["timeout", "throttled", "refused-401", "refused-403", "refused-400", "unavailable"],
)
def test_a_failed_judgement_keeps_that_candidate_and_every_later_one_and_stops(
    settings, answering, chat_api, failure
):
    configure(settings, chat_timeout_seconds=1, chat_max_retries=0)
    answering.chat.always(judge({0: text("10"), 1: failure}))

    started = time.monotonic()
    outcome, charged = run_pass()

    assert time.monotonic() - started < 3
    assert outcome == RelevanceOutcome(tuple(PASSAGES[1:]), 1, 1, JUDGEMENT_FAILED)
    assert judged(answering) == ids(PASSAGES[:2])  # no judgement after the one that failed
    assert charged == [120]  # only the judgement that answered was paid for


@ONE_API
def test_a_judgement_that_could_not_be_sent_keeps_everything(settings, answering, chat_api):
    closed = free_port()
    configure(settings, chat_base_url=f"http://127.0.0.1:{closed}/v1", chat_max_retries=0)

    outcome, _charged = run_pass()

    assert outcome == RelevanceOutcome(tuple(PASSAGES), 0, 0, JUDGEMENT_FAILED)


@ONE_API
@pytest.mark.parametrize(
    "reply",
    [
        text("Score: 90"),
        text("90%"),
        text("```90```"),
        text("ninety"),
        text("90 - it names the payment"),
        tool_calls(("search_mail", {"queryText": "insurer"})),
        empty(),
        malformed(),
    ],
    ids=["word", "unit", "fence", "spelled", "explained", "tool-call", "empty", "malformed"],
)
def test_a_reply_that_is_not_a_score_keeps_that_candidate_and_the_pass_goes_on(answering, chat_api, reply):
    answering.chat.always(judge({0: text("90"), 1: reply, 2: text("10"), 3: text("90")}))

    outcome, _charged = run_pass()

    assert ids(outcome.passages) == ids([PASSAGES[0], PASSAGES[1], PASSAGES[3]])
    assert (outcome.judged, outcome.dropped, outcome.failure) == (3, 1, NOT_A_SCORE)
    assert judged(answering) == ids(PASSAGES)
    # A later judgement that answered leaves the chat provider recorded as working.
    assert health.read_health("chat", configured=True).consecutive_failures == 0


@ONE_API
def test_every_candidate_below_the_threshold_leaves_nothing_and_is_not_a_failure(answering, chat_api):
    answering.chat.always(text("49"))

    outcome, charged = run_pass(threshold=50)

    assert outcome == RelevanceOutcome((), 4, 4, None)
    assert charged == [120] * 4


@ONE_API
def test_survivors_keep_the_input_order_whatever_their_scores(answering, chat_api):
    fused = [PASSAGES[3], PASSAGES[0], PASSAGES[2], PASSAGES[1]]
    answering.chat.always(judge({3: text("50"), 0: text("10"), 2: text("90"), 1: text("100")}))

    outcome, _charged = run_pass(fused, threshold=50)

    assert ids(outcome.passages) == ids([PASSAGES[3], PASSAGES[2], PASSAGES[1]])  # 50 is kept
    assert (outcome.judged, outcome.dropped, outcome.failure) == (4, 1, None)
    assert judged(answering) == ids(fused)  # judged one after another, in the fused order


@ONE_API
def test_candidates_beyond_max_candidates_are_kept_unjudged_and_never_sent(answering, chat_api):
    answering.chat.always(text("0"))

    outcome, _charged = run_pass(max_candidates=2)

    assert outcome == RelevanceOutcome(tuple(PASSAGES[2:]), 2, 2, None)
    assert judged(answering) == ids(PASSAGES[:2])


@ONE_API
def test_a_spent_allowance_sends_nothing(answering, chat_api):
    outcome, charged = run_pass(may_spend=lambda: False)

    assert outcome == RelevanceOutcome(tuple(PASSAGES), 0, 0, ALLOWANCE_SPENT)
    assert answering.recorded(ENDPOINT) == [] and charged == []


@ONE_API
def test_the_allowance_running_out_keeps_the_rest_and_stops(answering, chat_api):
    answering.chat.always(judge({0: text("90"), 1: text("10")}))
    spent: list[int] = []

    def may_spend() -> bool:
        return sum(spent) < 150  # each judgement reports 120 tokens: two are allowed

    charged: list[int] = []
    outcome = filter_passages(
        get_chat_model(),
        LOOKUP,
        "hybrid",
        PASSAGES,
        RelevanceSettings(threshold=50, max_candidates=20),
        may_spend=may_spend,
        charge=lambda tokens: (spent.append(tokens), charged.append(tokens)),
    )

    assert outcome == RelevanceOutcome((PASSAGES[0], PASSAGES[2], PASSAGES[3]), 2, 1, ALLOWANCE_SPENT)
    assert judged(answering) == ids(PASSAGES[:2]) and charged == [120, 120]


# --- the pass inside a whole run -----------------------------------------------------------------

QUERY_TEXT = "insurer claim"
PUBLISHED = {"subjectFragment": "Claim 4471", "receivedOnOrAfter": "2000-01-01T00:00:00+00:00"}
SEARCH = {"queryText": QUERY_TEXT, **PUBLISHED}


def _three_claim_letters() -> list[Passage]:
    inbox = Folder.objects.get(account__account_id="work", mapping__alias="inbox")
    EmailFactory(
        folder=inbox,
        subject="Claim 4471 adjuster visit",
        body="The adjuster from the insurer visits on Tuesday about claim 4471.",
    )
    embed_pending()
    refresh_term_stats()
    fused = retrieve_passages(
        QUERY_TEXT,
        accounts=["work"],
        folders=None,
        limit=20,
        max_characters=1200,
        mail_filter=MailFilter(
            subject_fragment="Claim 4471", received_on_or_after=datetime(2000, 1, 1, tzinfo=UTC)
        ),
    ).passages
    assert len(fused) == 3
    return list(fused)


def _split_judgement(content: str):
    """(the <query> element, the <message> elements) of a judgement's one user turn."""
    at = content.index("<retrieved-mail")
    return parse_xml(content[:at]), envelope_messages(content[at:])


@pytest.mark.django_db
@ONE_API
def test_a_run_judges_one_candidate_at_a_time_with_the_whole_lookup_and_hands_over_the_survivors(
    world, settings, answering, chat_api
):
    world()
    fused = _three_claim_letters()
    low = fused[1].stored_email_id
    configure(settings, chat_relevance_filter_enabled=True, chat_relevance_filter_threshold=50)
    lock = threading.Lock()
    flight = {"now": 0, "most": 0}

    def model(request: dict) -> Behaviour:
        with lock:
            flight["now"] += 1
            flight["most"] = max(flight["most"], flight["now"])
        try:
            time.sleep(0.05)  # long enough that two judgements in flight at once would meet here
            _instruction, turns, tools = turns_of(request)
            if not tools:
                return text("10" if low in turns[0].content else "90")
            if not any(turn.role == "tool" for turn in turns):
                return tool_calls(("search_mail", SEARCH))
            return text("The insurer agreed to pay 2,300 euros.")
        finally:
            with lock:
                flight["now"] -= 1

    answering.chat.always(model)

    result = ask_mail(QUESTION, accounts=["work"])

    requests = answering.recorded(ENDPOINT)
    shape = ["run" if turns_of(r.body)[2] else "judgement" for r in requests]
    assert shape == ["run", "judgement", "judgement", "judgement", "run"]
    judgements = requests[1:4]
    assert flight["most"] == 1
    arrivals = [r.at for r in judgements]
    assert all(later - earlier >= 0.045 for earlier, later in zip(arrivals, arrivals[1:], strict=False))
    assert [_judged_id(r.body) for r in judgements] == ids(fused)
    for request in judgements:
        instruction, turns, _tools = turns_of(request.body)
        assert instruction == RELEVANCE_INSTRUCTION and "tools" not in request.body
        (turn,) = turns
        assert turn.role == "user" and QUESTION not in turn.content
        query, messages = _split_judgement(turn.content)
        assert query.tag == "query" and query.find("text").text == QUERY_TEXT
        assert {f.attrib["name"]: f.text for f in query.findall("filter")} == PUBLISHED
        assert len(messages) == 1
    survivors = [fused[0].stored_email_id, fused[2].stored_email_id]
    _instruction, turns, _tools = turns_of(requests[-1].body)
    (result_turn,) = [turn for turn in turns if turn.role == "tool"]
    assert [m.attrib["id"] for m in envelope_messages(result_turn.content)] == survivors
    assert [c.stored_email_id for c in result.citations] == survivors


@pytest.mark.django_db
@ONE_API
def test_a_throttled_judgement_inside_a_run_hands_over_the_fused_ranking_and_the_run_answers(
    world, settings, answering, chat_api
):
    world()
    fused = _three_claim_letters()
    configure(settings, chat_relevance_filter_enabled=True)

    def model(request: dict) -> Behaviour:
        _instruction, turns, tools = turns_of(request)
        if not tools:
            return status(429, retry_after="1")
        if not any(turn.role == "tool" for turn in turns):
            return tool_calls(("search_mail", SEARCH))
        return text("The insurer agreed to pay 2,300 euros.")

    answering.chat.always(model)

    result = ask_mail(QUESTION, accounts=["work"])

    requests = answering.recorded(ENDPOINT)
    assert ["run" if turns_of(r.body)[2] else "judgement" for r in requests] == ["run", "judgement", "run"]
    _instruction, turns, _tools = turns_of(requests[-1].body)
    (result_turn,) = [turn for turn in turns if turn.role == "tool"]
    assert [m.attrib["id"] for m in envelope_messages(result_turn.content)] == ids(fused)
    assert result.answer == "The insurer agreed to pay 2,300 euros."
    assert health.read_health("chat", configured=True).consecutive_failures == 0


@pytest.mark.parametrize("reply", ["042", "\uff14\uff12", "\u0664\u0662", "+42", "4 2"])
def test_only_ascii_digits_without_a_sign_or_leading_zero_are_a_score(reply):
    assert strict_score(reply) is None

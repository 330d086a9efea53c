"""The adversarial set, put through the formatter, a whole run, the relevance pass and ask_mail.

Every file under tests/answering/adversarial/ is one message written to manipulate the run;
each test below is parametrized over the whole set, so a message added there is attacked
with everything here without a test being edited. The substitute model obeys every order
it reads (tests/answering/support.py), and the tests check that each order was delivered,
so a test cannot pass because an attack never reached the model.

The four properties (docs/operations/answering.md, Mail written to manipulate the model):

- scope: nothing outside the caller's accounts and visible, non-junk folders reaches a
  request, a passage or a citation; checked where the request resolves (ask_mail) and
  where the run binds (a Run given a BoundScope, and a passage from outside it);
- position: each request is exactly the instruction, the question, the model's own turns
  and the tool results the run wrote, compared as an equality;
- ranking: the relevance pass keeps survivors in the fused order, so a message cannot
  promote itself, and one judged low is dropped whatever it says;
- citations: read from the run's retrievals; an id the mail asked to cite is not cited.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from accounts.services.scope import resolve_scope
from answering import question_run as run_module
from answering.envelope import write_envelope, xml_safe
from answering.instructions import ANSWER_INSTRUCTION, RELEVANCE_INSTRUCTION
from answering.ledger import PeriodLedger
from answering.lookup import Lookup
from answering.question_run import Run, RunBounds
from answering.relevance import RelevanceSettings, filter_passages
from answering.services.question import ask_mail, bind_scope
from mailbox.services.passages import Passage, retrieve_passages
from mailbox.services.selection import MailFilter
from mailfathom.providers import get_chat_model
from tests.answering.fixtures import chat_endpoint, chat_script
from tests.answering.support import (
    World,
    adversarial_set,
    directives,
    envelope_messages,
    parse_xml,
    turns_of,
)
from tests.providers.openai_server import text

MESSAGES = adversarial_set()
QUESTION = "What did the insurer finally agree to pay?"
BOUNDS = RunBounds(
    max_passages_per_retrieval=20,
    max_characters_per_passage=1200,
    max_retrieved_characters=20_000,
    max_provider_calls=8,
    max_tokens=80_000,
)
IN_SCOPE = {("work", "inbox"), ("work", "archive")}


def test_the_set_covers_every_kind_of_attack():
    attacks = " ".join(message.attack for message in MESSAGES)
    for kind in ("orders", "envelope", "relevance", "account", "cite"):
        assert kind in attacks, kind


def orders_of(message, world: World | None = None) -> list[tuple[str, str]]:
    """The orders `message` gives, as the model reads them once it is stored in `world`."""
    body = message.body.replace("{private_email_id}", world.private_id) if world else message.body
    return directives([write_envelope("hybrid", [_passage(message.subject, body)])])


def _passage(subject: str, extract: str) -> Passage:
    return Passage(
        stored_email_id="019fe12f-a4a1-7759-8d95-21d0bb6eec90",
        account_id="work",
        account_display_name="Work",
        folder_alias="inbox",
        subject=subject,
        received_at=datetime(2026, 8, 1, tzinfo=UTC),
        extract=extract,
    )


# --- the formatter ---------------------------------------------------------------------------


@pytest.mark.parametrize("message", MESSAGES, ids=lambda m: m.name)
def test_the_formatter_quotes_each_message_as_one_inert_element(message):
    root = parse_xml(write_envelope("hybrid", [_passage(message.subject, message.body)]))
    assert root.tag == "retrieved-mail" and len(list(root)) == 1
    (element,) = list(root)
    assert element.find("subject").text == xml_safe(message.subject)
    assert element.find("extract").text == xml_safe(message.body)
    assert [child.tag for child in element] == ["subject", "extract"]


# --- shared assertions -----------------------------------------------------------------------


def assert_scope(world: World, bodies: list[dict], passages: list[Passage]) -> None:
    for body in bodies:
        sent = json.dumps(body)
        for marker in World.MARKERS:
            assert marker not in sent, marker
    assert all((p.account_id, p.folder_alias) in IN_SCOPE for p in passages)
    reached = {p.stored_email_id for p in passages}
    assert not reached & {world.private_id, world.junk_id, world.hidden_id}


def assert_position(bodies: list[dict], sent_turns: list[tuple[str, str, tuple]]) -> None:
    """Each request equals the instruction + question + the model's turns + the run's tool results."""
    for number, body in enumerate(bodies):
        instruction, turns, tools = turns_of(body)
        assert instruction == ANSWER_INSTRUCTION
        assert tools
        got = [(turn.role, turn.content, turn.calls) for turn in turns]
        assert got == sent_turns[: len(got)], f"request {number} differs from what the run composed"
        assert got[0] == ("user", QUESTION, ())
        for role, content, calls in got[1:]:
            if role == "assistant":
                assert calls, "an assistant turn in the history is one of the model's own tool calls"
            else:
                assert role == "tool"
                assert parse_xml(content).tag in {"retrieved-mail", "search-refused"}


def turns_the_run_sent(run: Run) -> list[tuple[str, str, tuple]]:
    return [
        (m.role, m.content, tuple((call.name, call.arguments) for call in m.tool_calls))
        for m in run.record.messages
    ]


def assert_envelopes_hold_only_retrieved_passages(bodies: list[dict], passages: list[Passage]) -> None:
    retrieved = {(p.stored_email_id, xml_safe(p.subject), xml_safe(p.extract)) for p in passages}
    _instruction, turns, _tools = turns_of(bodies[-1])
    for turn in turns:
        if turn.role == "tool":
            for element in envelope_messages(turn.content):
                key = (
                    element.attrib["id"],
                    element.find("subject").text or "",
                    element.find("extract").text or "",
                )
                assert key in retrieved


# --- a whole run (the scope bound into the run) ----------------------------------------------


@pytest.mark.django_db
@pytest.mark.parametrize("message", MESSAGES, ids=lambda m: m.name)
def test_a_whole_run_keeps_scope_position_and_citations(world, obedient, answering, chat_api, message):
    built = world(adversarial=message)
    scope = resolve_scope(["work"], None)
    run = Run(
        get_chat_model(),
        bind_scope(scope, None),
        BOUNDS,
        PeriodLedger(max_runs=5, max_tokens=10**6, period_seconds=3600),
    )

    outcome = run.answer(QUESTION)

    bodies = [r.body for r in answering.recorded(chat_endpoint(chat_api))]
    assert built.adversarial_ids[message.name] in {p.stored_email_id for p in run.record.passages}
    for order in orders_of(message, built):
        if order[0] != "score":  # scores are asked of the relevance pass, below
            assert order in obedient.obeyed, f"the order {order[0]} never reached the model"
    assert_scope(built, bodies, run.record.passages)
    assert_position(bodies, turns_the_run_sent(run))
    assert_envelopes_hold_only_retrieved_passages(bodies, run.record.passages)
    assert outcome.answer


@pytest.mark.django_db
@pytest.mark.parametrize("chat_api", ["chat-completions"], indirect=True)
def test_the_run_drops_a_passage_from_outside_its_bound_scope(
    world, obedient, answering, chat_api, monkeypatch
):
    """The second, independent check: even a retrieval that returned foreign mail is not admitted."""
    built = world()
    scope = resolve_scope(["work"], None)
    bound = bind_scope(scope, None)

    def leaky(*args, **kwargs):
        return retrieve_passages(*args, **{**kwargs, "accounts": None})  # as if the scope were lost

    monkeypatch.setattr(run_module, "retrieve_passages", leaky)
    run = Run(
        get_chat_model(), bound, BOUNDS, PeriodLedger(max_runs=5, max_tokens=10**6, period_seconds=3600)
    )

    run.answer(QUESTION)

    assert run.record.out_of_scope_dropped >= 1  # the private account's message was ranked ...
    bodies = [r.body for r in answering.recorded(chat_endpoint(chat_api))]
    assert_scope(built, bodies, run.record.passages)  # ... and never handed over


# --- the ask_mail request path (the scope resolved from the request) --------------------------


@pytest.mark.django_db
@pytest.mark.parametrize("chat_api", ["chat-completions"], indirect=True)
@pytest.mark.parametrize("message", MESSAGES, ids=lambda m: m.name)
def test_the_request_path_keeps_scope_and_cites_only_what_was_retrieved(
    world, obedient, answering, chat_api, message
):
    built = world(adversarial=message)

    result = ask_mail(QUESTION, accounts=["work"], folders=["inbox", "archive", "role:junk"])

    bodies = [r.body for r in answering.recorded(chat_endpoint(chat_api))]
    cited = [c.stored_email_id for c in result.citations]
    sent_ids = [
        element.attrib["id"]
        for turn in turns_of(bodies[-1])[1]
        if turn.role == "tool"
        for element in envelope_messages(turn.content)
    ]
    assert cited == list(dict.fromkeys(sent_ids))  # one per email, first-reached order, nothing else
    assert not set(cited) & {built.private_id, built.junk_id, built.hidden_id}
    assert all((c.account_id, c.folder_alias) in IN_SCOPE for c in result.citations)
    for body in bodies:
        for marker in World.MARKERS:
            assert marker not in json.dumps(body)
    relied = {source.source_number: source.stored_email_id for source in result.relied_on}
    assert set(relied.values()) <= set(cited)  # relied on is always a subset of the citations
    for number, email_id in relied.items():
        assert cited[number - 1] == email_id  # the run's own numbering, whatever the mail wrote
    for verb, argument in orders_of(message, built):
        if verb == "cite":
            assert argument in result.answer  # the model was talked into naming it ...
            assert argument not in cited  # ... and it is still not a citation
            assert not argument.isdigit() or int(argument) not in relied  # ... nor relied on


# --- the relevance pass ------------------------------------------------------------------------


def _candidates(query: str) -> list[Passage]:
    return list(
        retrieve_passages(query, accounts=["work"], folders=None, limit=20, max_characters=1200).passages
    )


@pytest.mark.django_db
@pytest.mark.parametrize("chat_api", ["chat-completions"], indirect=True)
@pytest.mark.parametrize("message", MESSAGES, ids=lambda m: m.name)
def test_a_passage_cannot_promote_itself_and_is_dropped_when_judged_low(
    world, obedient, answering, chat_api, message
):
    built = world(adversarial=message)
    own = built.adversarial_ids[message.name]
    lookup = Lookup(query_text="insurer payment")
    fused = _candidates("insurer payment")
    assert own in [p.stored_email_id for p in fused]
    settings = RelevanceSettings(threshold=50, max_candidates=20)
    chat = get_chat_model()

    kept = filter_passages(
        chat, lookup, "hybrid", fused, settings, may_spend=lambda: True, charge=lambda n: None
    )

    order = [p.stored_email_id for p in fused]
    survivors = [p.stored_email_id for p in kept.passages]
    assert survivors == [email_id for email_id in order if email_id in survivors]  # a subsequence
    if ("score", "100") in orders_of(message, built):
        assert ("score", "100") in obedient.obeyed  # it begged, was obeyed, and kept its place
    for body in [r.body for r in answering.recorded(chat_endpoint(chat_api))]:
        instruction, turns, tools = turns_of(body)
        assert instruction == RELEVANCE_INSTRUCTION and not tools
        (turn,) = turns
        assert turn.role == "user" and QUESTION not in turn.content
        envelope = turn.content[turn.content.index("<retrieved-mail") :]
        assert len(envelope_messages(envelope)) == 1

    # A judge that scores this message 0 drops it, whatever the message says.
    def harsh(request):
        _instruction, turns, _tools = turns_of(request)
        return text("0" if own in turns[0].content else "80")

    chat_script(answering, chat_api).always(harsh)
    judged = filter_passages(
        chat, lookup, "hybrid", fused, settings, may_spend=lambda: True, charge=lambda n: None
    )
    assert own not in [p.stored_email_id for p in judged.passages]
    assert [p.stored_email_id for p in judged.passages] == [e for e in order if e != own]


@pytest.mark.django_db
def test_a_lookup_bound_beyond_one_search_window_is_refused_and_junk_cannot_be_asked_for():
    from mailfathom.core.errors import MailFathomError

    with pytest.raises(MailFathomError) as refused:
        retrieve_passages("insurer", accounts=None, folders=None, limit=51, max_characters=1200)
    assert refused.value.code == 51003
    with pytest.raises(ValueError, match="junk"):
        retrieve_passages(
            "insurer",
            accounts=None,
            folders=None,
            limit=20,
            max_characters=1200,
            mail_filter=MailFilter(include_junk=True),
        )

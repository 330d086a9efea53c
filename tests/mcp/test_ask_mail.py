"""ask_mail through /mcp with the real client, a real uvicorn, and a scripted chat endpoint.

The chat endpoint and the embedding endpoint are both the scripted OpenAI-compatible
server (tests/providers/openai_server.py), declared to the uvicorn process through its
environment, as an operator would declare OpenAI or Ollama.
"""

from __future__ import annotations

import re

import pytest

from tests.answering.support import model_writing
from tests.mcp.answering_support import (
    answering_env,
    embedding_env,
    obedient_world,
)
from tests.mcp.conftest import call_tool, error_code, error_text, list_tools, payload
from tests.providers.openai_server import respond, status

pytestmark = pytest.mark.django_db(transaction=True)

QUESTION = "What did the insurer finally agree to pay?"


# A log line's timestamp ("10:06:52,300") could read as a figure the answer holds.
TIMESTAMP = re.compile(r"^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2},\d{3} ", re.MULTILINE)


def logged(server) -> str:
    """What the server logged, without the timestamps."""
    return TIMESTAMP.sub("", server.log())


@pytest.fixture(scope="module")
def answering_server(module_server_factory, scripted):
    return module_server_factory(**answering_env(scripted))


@pytest.fixture(scope="module")
def no_chat_server(module_server_factory, scripted):
    return module_server_factory(**embedding_env(scripted))


@pytest.fixture
def world(settings, scripted):
    """The mailbox, embedded with the same scripted endpoint the server queries with."""
    with obedient_world(settings, scripted) as built:
        yield built


def test_ask_mail_is_listed_and_answers_with_citations_and_the_three_flags(answering_server, api_key, world):
    names = [tool["name"] for tool in list_tools(answering_server, api_key)]
    assert names == [
        "list_accounts",
        "list_emails",
        "get_email_content",
        "search_emails",
        "ask_mail",
        "draft_reply",
    ]
    (descriptor,) = [tool for tool in list_tools(answering_server, api_key) if tool["name"] == "ask_mail"]
    assert descriptor["inputSchema"]["required"] == ["question"]
    assert set(descriptor["inputSchema"]["properties"]) == {"question", "accounts", "folders"}
    assert descriptor["annotations"]["readOnlyHint"] is True

    result = payload(
        call_tool(answering_server, api_key, "ask_mail", {"question": QUESTION, "accounts": ["work"]})
    )

    assert result["answer"].startswith("The insurer agreed to pay 2,300 euros.")
    assert result["answerTruncated"] is False
    assert result["citationsTruncated"] is False
    assert result["retrievalTruncated"] is False
    assert result["citations"], "an answer drawn from mail cites it"
    for citation in result["citations"]:
        assert set(citation) == {
            "storedEmailId",
            "accountId",
            "accountDisplayName",
            "folderAlias",
            "subject",
            "receivedAt",
        }
        assert citation["accountId"] == "work" and citation["storedEmailId"] in world.work_ids
    # The obedient model cites the first source it was shown, [1].
    assert result["reliedOn"] == [{**result["citations"][0], "sourceNumber": 1}]
    log = logged(answering_server)
    assert QUESTION not in log and "2,300" not in log and "Claim 4471" not in log
    assert "endpoint=scripted-endpoint" in log


def test_refusals_keep_their_codes_over_mcp(answering_server, api_key, world):
    assert error_code(call_tool(answering_server, api_key, "ask_mail", {"question": "x" * 1001})) == 51002
    assert (
        error_code(
            call_tool(answering_server, api_key, "ask_mail", {"question": "q", "accounts": ["nobody"]})
        )
        == 53001
    )
    assert error_code(call_tool(answering_server, api_key, "ask_mail", {})) == 51002  # absent question


def test_a_provider_failure_reaches_the_client_as_54001_and_the_log_says_which(
    answering_server, api_key, world, scripted
):
    scripted.chat.script(status(401))

    result = call_tool(answering_server, api_key, "ask_mail", {"question": QUESTION})

    assert error_code(result) == 54001
    assert "401" not in error_text(result) and "credential" not in error_text(result)
    assert "kind=credential_refused" in answering_server.log()
    # For the next minute the endpoint is withheld: not listed, and a call is told "not now".
    names = [tool["name"] for tool in list_tools(answering_server, api_key)]
    assert "ask_mail" not in names
    refused = call_tool(answering_server, api_key, "ask_mail", {"question": QUESTION})
    assert error_code(refused) == 56001 and "cannot right now" in error_text(refused)


def test_without_a_chat_endpoint_ask_mail_is_absent_and_a_direct_call_gets_56001(
    no_chat_server, api_key, world
):
    names = [tool["name"] for tool in list_tools(no_chat_server, api_key)]
    assert "ask_mail" not in names and "search_emails" in names

    result = call_tool(no_chat_server, api_key, "ask_mail", {"question": QUESTION})

    assert error_code(result) == 56001
    assert "does not answer questions" in error_text(result)


def test_relied_on_is_the_cited_subset_of_citations_and_a_forged_number_claims_nothing(
    answering_server, api_key, world, scripted
):
    seen: dict[str, int] = {}

    def answer(shown: dict[str, int]) -> str:
        seen.update(shown)
        last = max(shown.values())
        return (
            f"The insurer paid 2,300 euros [{last}], after the claim [1][{last}]. "
            f"Other sources: [{last + 1}], [0], [{world.private_id}]."
        )

    scripted.chat.always(respond(model_writing(answer)))

    result = payload(
        call_tool(answering_server, api_key, "ask_mail", {"question": QUESTION, "accounts": ["work"]})
    )

    assert len(seen) >= 2, "the lookup showed several emails"
    last = max(seen.values())
    by_number = {number: email_id for email_id, number in seen.items()}
    citations = {citation["storedEmailId"]: citation for citation in result["citations"]}
    assert [(source["sourceNumber"], source["storedEmailId"]) for source in result["reliedOn"]] == [
        (last, by_number[last]),
        (1, by_number[1]),
    ]
    for source in result["reliedOn"]:  # each one is a citation, shaped like one, plus its number
        number = source.pop("sourceNumber")
        assert source == citations[source["storedEmailId"]]
        assert result["citations"][number - 1] == source
    assert world.private_id not in citations
    log = logged(answering_server)
    assert "relied_on=2 unmatched_citations=2" in log
    assert "2,300" not in log and QUESTION not in log

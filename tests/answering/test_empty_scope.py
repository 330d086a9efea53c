"""ask_mail's lookup over a scope whose folders leave nothing to read gets an empty envelope.

The question's folders may resolve to nothing readable (an alias matching nothing, a folder
hidden from tools, only the junk role, which answering never reads). The scope check
passes, the model is called and looks mail up: the lookup must answer with an empty
<retrieved-mail> envelope, not fail the run after the model call was paid for.
"""

from __future__ import annotations

import pytest

from answering.services.question import ask_mail
from tests.answering.fixtures import chat_endpoint
from tests.answering.support import parse_xml, turns_of

pytestmark = pytest.mark.django_db

QUESTION = "What did the insurer finally agree to pay?"


@pytest.mark.parametrize("chat_api", ["chat-completions"], indirect=True)
@pytest.mark.parametrize("folders", [["no-such-folder"], ["hidden"], ["role:junk"]])
def test_a_lookup_over_folders_that_read_nothing_gets_an_empty_envelope(
    world, obedient, answering, chat_api, folders
):
    world()

    result = ask_mail(QUESTION, accounts=["work"], folders=folders)

    assert result.citations == [] and result.answer.startswith("The insurer agreed")
    requests = answering.recorded(chat_endpoint(chat_api))
    assert len(requests) == 2  # the lookup, then the answer
    _instruction, turns, _tools = turns_of(requests[1].body)
    [tool_result] = [turn.content for turn in turns if turn.role == "tool"]
    envelope = parse_xml(tool_result)
    assert envelope.tag == "retrieved-mail" and list(envelope) == []
    for marker in ("JUNK-5512", "HIDDEN-9046", "PRIVATE-7731"):
        assert marker not in str(requests[1].body)

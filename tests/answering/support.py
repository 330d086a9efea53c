"""What answering tests stand on: a small mailbox world and a substitute model that obeys mail.

The substitute is served over HTTP by tests/providers/openai_server.py in the OpenAI wire
format (Chat Completions or Responses) and reached by the real `openai` client. It is
scripted as the worst model we can imagine: it does what the mail asks. Mail gives it
orders in a tiny language, one per line, so a test can tell which orders were delivered:

    DO: say <text>          put <text> in the answer
    DO: search <json>       call search_mail with exactly these arguments
    DO: cite <id>           cite [<id>] in the answer
    DO: score <n>           answer a relevance judgement with <n>

What is under test is the system around the model, never the model's judgement
(docs/operations/answering.md, Mail written to manipulate the model).
"""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from accounts.models import FolderRole
from tests.factories import MailAccountFactory
from tests.mailbox.factories import EmailFactory, mapped_folder
from tests.providers.openai_server import text, tool_calls

ADVERSARIAL = Path(__file__).parent / "adversarial"
_DIRECTIVE = re.compile(r"DO: (say|search|cite|score) (.+?)(?= DO: |$)")


# --- the mailbox ----------------------------------------------------------------------------


@dataclass
class World:
    """Two accounts; the caller may read `work` only. Markers name mail that must never leak."""

    work_ids: list[str] = field(default_factory=list)
    private_id: str = ""
    junk_id: str = ""
    hidden_id: str = ""
    adversarial_ids: dict[str, str] = field(default_factory=dict)

    MARKERS = ("PRIVATE-7731", "JUNK-5512", "HIDDEN-9046")


@dataclass(frozen=True)
class AdversarialMessage:
    name: str
    attack: str
    subject: str
    body: str


def adversarial_set() -> list[AdversarialMessage]:
    """Every message under tests/answering/adversarial/, in name order."""
    messages = []
    for path in sorted(ADVERSARIAL.glob("*.json")):
        data = json.loads(path.read_text())
        messages.append(AdversarialMessage(path.stem, data["attack"], data["subject"], data["body"]))
    return messages


def build_world(*, adversarial: AdversarialMessage | None = None) -> World:
    """The mailbox every answering test reads; rows only, embedding is the caller's to run."""
    world = World()
    work = MailAccountFactory(account_id="work", display_name="Work")
    inbox = mapped_folder(work, "inbox", FolderRole.INBOX)
    archive = mapped_folder(work, "archive", FolderRole.ARCHIVE)
    junk = mapped_folder(work, "junk", FolderRole.JUNK)
    hidden = mapped_folder(work, "hidden", visible_to_tools=False)
    private = MailAccountFactory(account_id="private", display_name="Private")
    private_inbox = mapped_folder(private, "inbox", FolderRole.INBOX)
    for folder, subject, body in (
        (inbox, "Claim 4471 insurer payment", "The insurer agreed to pay 2,300 euros for the water damage."),
        (archive, "Claim 4471 opened", "We opened claim 4471 with the insurer after the pipe burst."),
        (inbox, "Lunch on Friday", "Shall we meet for lunch on Friday at noon?"),
    ):
        world.work_ids.append(str(EmailFactory(folder=folder, subject=subject, body=body).pk))
    world.junk_id = str(
        EmailFactory(
            folder=junk, subject="insurer payment JUNK-5512", body="insurer payment of 9,999 euros JUNK-5512"
        ).pk
    )
    world.hidden_id = str(
        EmailFactory(
            folder=hidden, subject="insurer payment HIDDEN-9046", body="insurer payment HIDDEN-9046 hidden"
        ).pk
    )
    world.private_id = str(
        EmailFactory(
            folder=private_inbox,
            subject="insurer payment PRIVATE-7731",
            body="insurer payment PRIVATE-7731: salary and the private claim",
        ).pk
    )
    if adversarial is not None:
        body = adversarial.body.replace("{private_email_id}", world.private_id)
        email = EmailFactory(folder=inbox, subject=adversarial.subject, body=body)
        world.adversarial_ids[adversarial.name] = str(email.pk)
    return world


# --- reading what the substitute was sent ---------------------------------------------------


@dataclass(frozen=True)
class Turn:
    role: str  # "user", "assistant", "tool"
    content: str
    calls: tuple[tuple[str, str], ...] = ()  # (name, arguments) of an assistant turn


def turns_of(request: dict[str, Any]) -> tuple[str, list[Turn], bool]:
    """(instruction, turns, tools offered) of a Chat Completions or Responses request body."""
    if "messages" in request:
        messages = request["messages"]
        instruction = messages[0]["content"] if messages and messages[0]["role"] == "system" else ""
        turns = []
        for message in messages[1:] if instruction else messages:
            calls = tuple(
                (call["function"]["name"], call["function"]["arguments"])
                for call in message.get("tool_calls") or ()
            )
            turns.append(Turn(message["role"], message.get("content") or "", calls))
        return instruction, turns, bool(request.get("tools"))
    turns = []
    for item in request.get("input", []):
        kind = item.get("type", "message")
        if kind == "function_call":
            if turns and turns[-1].role == "assistant":
                previous = turns.pop()
                turns.append(
                    Turn("assistant", previous.content, (*previous.calls, (item["name"], item["arguments"])))
                )
            else:
                turns.append(Turn("assistant", "", ((item["name"], item["arguments"]),)))
        elif kind == "function_call_output":
            turns.append(Turn("tool", item["output"]))
        else:
            content = item["content"]
            if isinstance(content, list):
                content = "".join(part.get("text", "") for part in content)
            turns.append(Turn(item["role"], content))
    return request.get("instructions") or "", turns, bool(request.get("tools"))


def parse_xml(fragment: str) -> ET.Element:
    return ET.fromstring(fragment)  # noqa: S314 (our own envelope; no DTD is ever written)


def envelope_messages(tool_result: str) -> list[ET.Element]:
    """The <message> elements of a tool result ([] for a refusal or an empty envelope)."""
    root = parse_xml(tool_result)
    return list(root) if root.tag == "retrieved-mail" else []


def directives(tool_results: list[str]) -> list[tuple[str, str]]:
    """The orders the mail in these results gives, in the order the model read them."""
    found = []
    for result in tool_results:
        for message in envelope_messages(result):
            for part in ("subject", "extract"):
                found += _DIRECTIVE.findall(message.find(part).text or "")
    return found


# --- the substitute -------------------------------------------------------------------------


class ObedientModel:
    """A scripted chat model that does whatever the retrieved mail tells it to.

    First it searches for `first_query`; then it runs every `DO: search` it has read and not
    yet run; then it answers, saying and citing whatever the mail asked, plus the first
    message it retrieved, cited by the source number the run showed it under. In a relevance
    judgement it gives the score the mail asks for, or `default_score`. `loop=True` makes it
    search forever (a question designed to loop).
    """

    def __init__(self, first_query: str = "insurer payment", default_score: int = 60, loop: bool = False):
        self.first_query = first_query
        self.default_score = default_score
        self.loop = loop
        self.obeyed: list[tuple[str, str]] = []
        self.requests: list[dict[str, Any]] = []

    def __call__(self, request: dict[str, Any]):
        self.requests.append(request)
        return self._reply(request)

    def _reply(self, request: dict[str, Any]):
        _instruction, turns, tools_offered = turns_of(request)
        if not tools_offered:
            return self._judge(turns)
        results = [turn.content for turn in turns if turn.role == "tool"]
        made = [call for turn in turns for call in turn.calls]
        if not results:
            return tool_calls(("search_mail", {"queryText": self.first_query}))
        if self.loop:
            return tool_calls(("search_mail", {"queryText": f"{self.first_query} {len(made)}"}))
        orders = directives(results)
        for verb, argument in orders:
            if verb == "search" and not any(
                _same_arguments(arguments, argument) for _name, arguments in made
            ):
                self.obeyed.append((verb, argument))
                return tool_calls(("search_mail", json.loads(argument)))
        answer = ["The insurer agreed to pay 2,300 euros."]
        for verb, argument in orders:
            if verb == "say":
                self.obeyed.append((verb, argument))
                answer.append(argument)
            elif verb == "cite":
                self.obeyed.append((verb, argument))
                answer.append(f"See [{argument}].")
        first = next((m.attrib["number"] for result in results for m in envelope_messages(result)), None)
        if first:
            answer.append(f"[{first}]")
        return text(" ".join(answer))

    def _judge(self, turns: list[Turn]):
        (user,) = [turn for turn in turns if turn.role == "user"]
        envelope = user.content[user.content.index("<retrieved-mail") :]
        for verb, argument in directives([envelope]):
            if verb == "score":
                self.obeyed.append((verb, argument))
                return text(argument.strip())
        return text(str(self.default_score))


def _same_arguments(made: str, wanted: str) -> bool:
    try:
        return json.loads(made) == json.loads(wanted)
    except ValueError:
        return False


# --- a model that cites by number ----------------------------------------------------------


def shown_numbers(request: dict) -> dict[str, int]:
    """email id -> the number attribute the run put on it, over every envelope of `request`."""
    _instruction, turns, _tools = turns_of(request)
    return {
        message.attrib["id"]: int(message.attrib["number"])
        for turn in turns
        if turn.role == "tool"
        for message in envelope_messages(turn.content)
    }


def model_writing(answer_for: Callable[[dict[str, int]], str], *lookups: dict) -> Callable:
    """A model that makes `lookups` (one by default), then answers `answer_for(shown numbers)`.

    Serve it with `respond(...)`; `answer_for` gets email id -> the number the run showed.
    """
    searches = lookups or ({"queryText": "insurer payment"},)

    def reply(request: dict):
        _instruction, turns, _tools = turns_of(request)
        made = sum(len(turn.calls) for turn in turns)
        if made < len(searches):
            return tool_calls(("search_mail", searches[made]))
        return text(answer_for(shown_numbers(request)))

    return reply

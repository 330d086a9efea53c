"""The chat interface ask_mail talks to, and the resilience wrapper every chat model comes in.

A ChatModel completes one exchange: an instruction, the messages so far and the tools. The
instruction always goes in the API's instruction position, never merged into a user turn,
and no backend adds text of its own: that separation is what lets the model tell
MailFathom's instruction from quoted mail. `get_chat_model()` always wraps a backend in
ResilientChat. Tool-call arguments stay as the model wrote them, valid JSON or not, for the
caller to judge. Nothing here logs or raises prompts, mail or model output.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from mailfathom.providers.errors import BAD_RESPONSE, ProviderError
from mailfathom.providers.resilience import Resilience

CHAT_ROLE = "chat"
ROLES = ("user", "assistant", "tool")
# The finish reasons a caller may act on, in Chat Completions' words (the Responses API's
# status is translated to them).
FINISH_STOP, FINISH_LENGTH, FINISH_FILTER = "stop", "length", "content_filter"


@dataclass(frozen=True)
class ToolDefinition:
    """A function the model may call: its name, what it does, and its JSON Schema parameters."""

    name: str
    description: str
    parameters: dict[str, Any]


@dataclass(frozen=True)
class ToolCall:
    """One call the model made; `arguments` is its JSON text as written, possibly invalid."""

    call_id: str
    name: str
    arguments: str


@dataclass(frozen=True)
class ChatMessage:
    """One turn: a user question, an assistant answer or tool calls, or one tool result."""

    role: str  # "user", "assistant" or "tool"
    content: str = ""
    tool_calls: tuple[ToolCall, ...] = ()  # assistant turns that called tools
    tool_call_id: str = ""  # tool turns: which call this answers


@dataclass(frozen=True)
class ChatReply:
    """What one call produced, and the tokens it cost (0 and usage_reported False if unknown)."""

    text: str
    tool_calls: tuple[ToolCall, ...]
    input_tokens: int
    output_tokens: int
    usage_reported: bool
    # Why the model stopped, in Chat Completions' words ("stop", "length", "content_filter",
    # "tool_calls"); None when the endpoint did not say. Left out of equality: it is a
    # property of the transport's report, not of what the model answered.
    finish_reason: str | None = field(default=None, compare=False)

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens


class ChatModel(ABC):
    """Completes an exchange with one chat model; `alias` is the operator's name for it."""

    alias: str
    model: str

    @abstractmethod
    def complete(
        self,
        instruction: str,
        messages: Sequence[ChatMessage],
        tools: Sequence[ToolDefinition] = (),
    ) -> ChatReply:
        """Send `instruction` (instruction position only), `messages` in order, and `tools`."""


class ChatBackend(ChatModel):
    """A concrete client without resilience of its own.

    `send` may be given the time left in the call's deadline as `timeout` and should pass it
    to its network client; it raises ProviderError (role "chat") for every failure it can
    classify and never puts a prompt, mail or the reply into an exception or a log line.
    """

    @abstractmethod
    def send(
        self,
        instruction: str,
        messages: Sequence[ChatMessage],
        tools: Sequence[ToolDefinition],
        *,
        timeout: float | None,
    ) -> ChatReply:
        """One call to the endpoint, no retries."""

    def complete(
        self,
        instruction: str,
        messages: Sequence[ChatMessage],
        tools: Sequence[ToolDefinition] = (),
    ) -> ChatReply:
        return self.send(instruction, messages, tools, timeout=None)


def check_request(instruction: str, messages: Sequence[ChatMessage], tools: Sequence[ToolDefinition]) -> None:
    """Refuse a malformed request (a caller's bug) with TypeError/ValueError, before any call."""
    if not isinstance(instruction, str):
        raise TypeError("complete() takes the instruction as a string")
    for message in messages:
        if not isinstance(message, ChatMessage):
            raise TypeError("complete() takes messages as ChatMessage values")
        if message.role not in ROLES:
            raise ValueError("a chat message's role is user, assistant or tool")
        if not isinstance(message.content, str):
            raise TypeError("a chat message's content is a string")
        if message.tool_calls and message.role != "assistant":
            raise ValueError("only assistant turns carry tool calls")
        if not all(isinstance(call, ToolCall) for call in message.tool_calls):
            raise TypeError("tool calls are ToolCall values")
        if (message.role == "tool") != bool(message.tool_call_id):
            raise ValueError("a tool turn, and only a tool turn, names the call it answers")
    for tool in tools:
        if not isinstance(tool, ToolDefinition):
            raise TypeError("complete() takes tools as ToolDefinition values")
        if not tool.name or not isinstance(tool.parameters, dict):
            raise ValueError("a tool has a name and a JSON Schema object of parameters")


def check_reply(reply: object, role: str = CHAT_ROLE) -> ChatReply:
    """`reply` if it has the shape of a usable answer, else ProviderError(bad_response, 73001)."""
    usable = (
        isinstance(reply, ChatReply)
        and isinstance(reply.text, str)
        and isinstance(reply.tool_calls, tuple)
        and all(
            isinstance(call, ToolCall)
            and isinstance(call.call_id, str)
            and bool(call.call_id)
            and isinstance(call.name, str)
            and bool(call.name)
            and isinstance(call.arguments, str)
            for call in reply.tool_calls
        )
        and all(isinstance(count, int) and count >= 0 for count in (reply.input_tokens, reply.output_tokens))
        and (bool(reply.text.strip()) or bool(reply.tool_calls) or reply.finish_reason == FINISH_FILTER)
    )
    if not usable:
        raise ProviderError(BAD_RESPONSE, False, role=role)
    assert isinstance(reply, ChatReply)
    return reply


class ResilientChat(ChatModel):
    """A ChatBackend behind a Resilience budget; every reply is checked before it is returned."""

    def __init__(self, backend: ChatBackend, resilience: Resilience) -> None:
        self.backend = backend
        self.resilience = resilience
        self.alias = backend.alias
        self.model = backend.model

    def complete(
        self,
        instruction: str,
        messages: Sequence[ChatMessage],
        tools: Sequence[ToolDefinition] = (),
    ) -> ChatReply:
        messages, tools = tuple(messages), tuple(tools)
        check_request(instruction, messages, tools)

        def operation(seconds_left: float) -> ChatReply:
            reply = self.backend.send(instruction, messages, tools, timeout=seconds_left)
            return check_reply(reply, self.resilience.role)

        return self.resilience.call(operation, size=len(messages))

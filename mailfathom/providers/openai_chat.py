"""Chat from any OpenAI-compatible endpoint, through Chat Completions or the Responses API.

MAILFATHOM_CHAT_API chooses the wire format; either way the instruction goes in the
instruction position and nothing of MailFathom's own is added to a request (temperature and
reasoning effort only when set). Responses calls send `store=False` and non-strict tools.
Tool-call arguments are passed on as written, even when cut off; a reply with neither text
nor tool calls is ProviderError(bad_response). SDK retries are off (resilience owns them)
and SDK failures are translated without their text.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import openai

from mailfathom.core.config import MailFathomSettings
from mailfathom.providers.chat import (
    CHAT_ROLE,
    FINISH_FILTER,
    FINISH_LENGTH,
    FINISH_STOP,
    ChatBackend,
    ChatMessage,
    ChatReply,
    ToolCall,
    ToolDefinition,
)
from mailfathom.providers.errors import BAD_RESPONSE, ProviderError
from mailfathom.providers.openai_compat import endpoint_problems, make_client, translate_error

CHAT_COMPLETIONS = "chat-completions"
RESPONSES = "responses"
APIS = (CHAT_COMPLETIONS, RESPONSES)
DEFAULT_EFFORT = "default"
# Where each drafting role's own settings start (MAILFATHOM_DRAFTING_UTILITY_MODEL, ...).
_PREFIXES = {"utility": "DRAFTING_UTILITY_", "drafting": "DRAFTING_"}


def _text(value: object) -> str:
    return value if isinstance(value, str) else ""


def _arguments(value: object) -> str:
    """The arguments JSON text as the model wrote it; an object some servers send is re-encoded."""
    if isinstance(value, str):
        return value
    if value is None:
        return ""
    if isinstance(value, dict | list):
        return json.dumps(value)
    raise TypeError("tool call arguments are neither text nor JSON")


def _count(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


class OpenAIChat(ChatBackend):
    """A chat model on an OpenAI-compatible endpoint (see the module docstring)."""

    provider = "openai"

    def __init__(
        self,
        *,
        model: str,
        alias: str = "chat",
        base_url: str = "",
        api_key: str = "",
        api: str = CHAT_COMPLETIONS,
        temperature: float | None = None,
        max_output_tokens: int = 2048,
        reasoning_effort: str = DEFAULT_EFFORT,
        timeout: float = 300.0,
        role: str = CHAT_ROLE,
    ) -> None:
        if api not in APIS:
            raise ValueError("api is chat-completions or responses")
        self.model = model
        self.alias = alias
        self.api = api
        self.temperature = temperature
        self.max_output_tokens = max_output_tokens
        self.reasoning_effort = reasoning_effort
        self._timeout = timeout
        self.role = role
        self._client = make_client(base_url, api_key, timeout)

    @classmethod
    def from_settings(cls, values: MailFathomSettings, role: str = CHAT_ROLE) -> OpenAIChat:
        """The backend of one chat-shaped role ("chat", or a drafting role: see config.chat_endpoint)."""
        endpoint = values.chat_endpoint(role)
        temperature = endpoint.temperature
        return cls(
            model=endpoint.model,
            alias=endpoint.alias,
            base_url=endpoint.base_url,
            api_key=endpoint.api_key,
            api=endpoint.api,
            temperature=None if temperature is None else float(temperature),
            max_output_tokens=endpoint.max_output_tokens,
            reasoning_effort=endpoint.reasoning_effort,
            timeout=endpoint.timeout_seconds,
            role=role,
        )

    @staticmethod
    def configuration_problems(values: MailFathomSettings, role: str = CHAT_ROLE) -> list[str]:
        prefix = "MAILFATHOM_CHAT_" if role == CHAT_ROLE else f"MAILFATHOM_{_PREFIXES[role]}"
        label = "the chat provider" if role == CHAT_ROLE else f"the {role} provider"
        problems = endpoint_problems(values.endpoint(role), prefix, label)
        if not values.chat_endpoint(role).alias.strip():
            problems.append(f"{prefix}ALIAS must not be empty when {label} is openai.")
        return problems

    def send(
        self,
        instruction: str,
        messages: Sequence[ChatMessage],
        tools: Sequence[ToolDefinition],
        *,
        timeout: float | None,
    ) -> ChatReply:
        timeout = self._timeout if timeout is None else timeout
        # The failure is raised outside the handlers so it carries no __context__: the SDK's
        # exception (or a JSON error's document) may quote the request or the reply.
        failure: ProviderError | None = None
        try:
            if self.api == RESPONSES:
                reply = self._responses(instruction, messages, tools, timeout)
            else:
                reply = self._chat_completions(instruction, messages, tools, timeout)
        except openai.OpenAIError as error:
            failure = translate_error(error, self.role)
        except (ValueError, TypeError, AttributeError, KeyError, IndexError):
            failure = ProviderError(BAD_RESPONSE, False, role=self.role)
        if failure is not None:
            raise failure
        if not reply.text.strip() and not reply.tool_calls and reply.finish_reason != FINISH_FILTER:
            # A filtered reply may be empty: it is still an answer, one the caller refuses.
            raise ProviderError(BAD_RESPONSE, False, role=self.role)
        return reply

    # Chat Completions

    def chat_completions_request(
        self, instruction: str, messages: Sequence[ChatMessage], tools: Sequence[ToolDefinition]
    ) -> dict[str, Any]:
        """The keyword arguments of chat.completions.create for this exchange."""
        wire: list[dict[str, Any]] = [{"role": "system", "content": instruction}]
        for message in messages:
            if message.role == "tool":
                answer = {"role": "tool", "tool_call_id": message.tool_call_id, "content": message.content}
                wire.append(answer)
            elif message.role == "assistant" and message.tool_calls:
                calls = [
                    {
                        "id": call.call_id,
                        "type": "function",
                        "function": {"name": call.name, "arguments": call.arguments},
                    }
                    for call in message.tool_calls
                ]
                wire.append({"role": "assistant", "content": message.content, "tool_calls": calls})
            else:
                wire.append({"role": message.role, "content": message.content})
        request: dict[str, Any] = {
            "model": self.model,
            "messages": wire,
            "max_completion_tokens": self.max_output_tokens,
        }
        if tools:
            request["tools"] = [
                {
                    "type": "function",
                    "function": {
                        "name": tool.name,
                        "description": tool.description,
                        "parameters": tool.parameters,
                    },
                }
                for tool in tools
            ]
        if self.temperature is not None:
            request["temperature"] = self.temperature
        if self.reasoning_effort != DEFAULT_EFFORT:
            request["reasoning_effort"] = self.reasoning_effort
        return request

    def _chat_completions(
        self,
        instruction: str,
        messages: Sequence[ChatMessage],
        tools: Sequence[ToolDefinition],
        timeout: float,
    ) -> ChatReply:
        request = self.chat_completions_request(instruction, messages, tools)
        response = self._client.chat.completions.create(**request, timeout=timeout)
        choice = response.choices[0]
        message = choice.message
        text = _text(message.content) or _text(getattr(message, "refusal", None))
        calls = []
        for index, call in enumerate(message.tool_calls or ()):
            function = getattr(call, "function", None)
            if function is None:  # a custom (non-function) tool call: not one we offered
                raise ValueError("unexpected tool call type")
            calls.append(
                ToolCall(
                    call_id=_text(call.id) or f"call_{index}",
                    name=_text(function.name),
                    arguments=_arguments(function.arguments),
                )
            )
        usage = response.usage
        return ChatReply(
            text=text,
            tool_calls=tuple(calls),
            input_tokens=_count(getattr(usage, "prompt_tokens", None)),
            output_tokens=_count(getattr(usage, "completion_tokens", None)),
            usage_reported=usage is not None,
            finish_reason=_text(getattr(choice, "finish_reason", None)) or None,
        )

    # Responses API

    def responses_request(
        self, instruction: str, messages: Sequence[ChatMessage], tools: Sequence[ToolDefinition]
    ) -> dict[str, Any]:
        """The keyword arguments of responses.create for this exchange."""
        items: list[dict[str, Any]] = []
        for message in messages:
            if message.role == "tool":
                output = {"type": "function_call_output", "call_id": message.tool_call_id}
                items.append({**output, "output": message.content})
                continue
            if message.content or not message.tool_calls:
                items.append({"role": message.role, "content": message.content})
            for call in message.tool_calls:
                items.append(
                    {
                        "type": "function_call",
                        "call_id": call.call_id,
                        "name": call.name,
                        "arguments": call.arguments,
                    }
                )
        request: dict[str, Any] = {
            "model": self.model,
            "instructions": instruction,
            "input": items,
            "max_output_tokens": self.max_output_tokens,
            "store": False,
        }
        if tools:
            request["tools"] = [
                {
                    "type": "function",
                    "name": tool.name,
                    "description": tool.description,
                    "parameters": tool.parameters,
                    "strict": False,
                }
                for tool in tools
            ]
        if self.temperature is not None:
            request["temperature"] = self.temperature
        if self.reasoning_effort != DEFAULT_EFFORT:
            request["reasoning"] = {"effort": self.reasoning_effort}
        return request

    def _responses(
        self,
        instruction: str,
        messages: Sequence[ChatMessage],
        tools: Sequence[ToolDefinition],
        timeout: float,
    ) -> ChatReply:
        request = self.responses_request(instruction, messages, tools)
        response = self._client.responses.create(**request, timeout=timeout)
        texts: list[str] = []
        refusals: list[str] = []
        calls: list[ToolCall] = []
        for item in response.output or ():
            kind = getattr(item, "type", None)
            if kind == "message":
                parts = [(getattr(part, "type", None), part) for part in item.content or ()]
                texts.append("".join(_text(part.text) for kind_, part in parts if kind_ == "output_text"))
                refusals.extend(_text(part.refusal) for kind_, part in parts if kind_ == "refusal")
            elif kind == "function_call":
                calls.append(
                    ToolCall(
                        call_id=_text(item.call_id) or _text(getattr(item, "id", None)),
                        name=_text(item.name),
                        arguments=_arguments(item.arguments),
                    )
                )
            # reasoning and other items carry nothing the caller is given
        text = "\n\n".join(part for part in texts if part) or "\n\n".join(part for part in refusals if part)
        usage = response.usage
        return ChatReply(
            text=text,
            tool_calls=tuple(calls),
            input_tokens=_count(getattr(usage, "input_tokens", None)),
            output_tokens=_count(getattr(usage, "output_tokens", None)),
            usage_reported=usage is not None,
            finish_reason=_responses_finish(response),
        )


def _responses_finish(response: object) -> str | None:
    """The Responses API's status, in Chat Completions' finish-reason words (None: not said)."""
    status = getattr(response, "status", None)
    if status == "completed":
        return FINISH_STOP
    if status == "incomplete":
        reason = getattr(getattr(response, "incomplete_details", None), "reason", None)
        return FINISH_FILTER if reason == "content_filter" else FINISH_LENGTH
    return None

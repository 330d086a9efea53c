"""Who is reading: the person, key or token a request acts for, as plain names.

The entrypoints that authenticate a reader set it for the rest of the request
(`acting_as`), beside the account limit of accounts.services.scope, and it follows the use
case into its worker thread the same way (a context variable). The records that must name
their requester read it (`current_caller`): the access trail and the answering trail
(docs/operations/compliance.md). It decides nothing: scope resolution alone says what a
caller may read.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass

from mailfathom.core.text import has_control_character

# The kinds of requester a record may name.
PERSON = "person"  # a signed-in user: admin, the people pages
MCP_KEY = "mcp_key"  # an MCP API key, by its name
OAUTH_TOKEN = "oauth_token"  # noqa: S105  (a kind, not a secret); an MCP OAuth access token, by its client; owner is the consenting person
API_TOKEN = "api_token"  # noqa: S105  (a kind, not a secret); a compliance API token, by its name
UNAUTHENTICATED = "unauthenticated"  # /mcp under posture none (loopback only)
TASK = "task"  # no caller at all: a worker, a command

NAME_LENGTH = 200
CLIENT_NAME_LENGTH = 100


def bounded_name(value: object, length: int = NAME_LENGTH) -> str:
    """`value` as a record may hold it: text, stripped, without control characters, at most `length`."""
    if not isinstance(value, str):
        return ""
    text = value.strip()
    if has_control_character(text):
        text = "".join(character for character in text if character.isprintable())
    return text[:length]


@dataclass(frozen=True)
class Caller:
    """A requester as records name it: its kind, its name, the person owning it, the client."""

    kind: str
    name: str
    owner: str = ""  # the person a key or token belongs to, where one does
    client: str = ""  # the client's own name (an OAuth client, an MCP clientInfo), where known

    def with_client(self, client: object) -> Caller:
        """This caller, naming `client` unless it already names one (a registered name wins)."""
        if self.client:
            return self
        return Caller(self.kind, self.name, self.owner, bounded_name(client, CLIENT_NAME_LENGTH))


def person(user: object) -> Caller:
    """The caller a signed-in user is."""
    get_username = getattr(user, "get_username", None)
    name = get_username() if callable(get_username) else ""
    return Caller(PERSON, bounded_name(name))


_caller: ContextVar[Caller | None] = ContextVar("mailfathom_caller", default=None)


@contextmanager
def acting_as(caller: Caller | None) -> Iterator[None]:
    """Within the block, records name `caller` as the requester."""
    token = _caller.set(caller)
    try:
        yield
    finally:
        _caller.reset(token)


def current_caller() -> Caller | None:
    """The requester this context acts for, or None (a worker, a command, a test)."""
    return _caller.get()

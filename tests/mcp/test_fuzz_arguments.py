"""Tool arguments fuzzed from each tool's published input schema, and near-misses of it.

Every call goes through the bridge's one entry for a call (mailfathom.mcp.server.Bridge.
call_tool: argument conversion, the use case, the published result or refusal). The
property: a call either succeeds or is refused with a caller code that docs/errors.md
documents; never 54001, never an exception. Inputs are generated from the schema tools/list
publishes (valid ones; `from_schema` below reads the JSON Schema keywords those schemas use,
since hypothesis-jsonschema 0.23.1 no longer runs on the pinned hypothesis), and from valid
ones with one fault put in
(a wrong JSON type, an unknown or missing argument, a value past a bound, names the
mailbox really has). A fixed seed and a bounded count keep it repeatable and short.

The runner is the one seam replaced: UseCaseRunner runs use cases on a pool of threads;
here they run on the event loop's own thread, one call at a time, each closing the
connection it opened (a task has connections of its own, so the rows are committed:
transaction=True). The real pool is exercised over HTTP in tests/mcp.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import re
from collections import Counter
from datetime import UTC, timedelta, timezone
from pathlib import Path
from typing import Any

import anyio
import pytest
from django.db import connections
from hypothesis import HealthCheck, given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st
from mcp_types import CallToolRequestParams

from accounts.models import FolderRole
from mailbox.services.lexical_search import refresh_term_stats
from mailfathom.mcp.execution import UseCaseRunner
from mailfathom.mcp.server import Bridge
from mailfathom.mcp.tools import TOOLS
from tests.configure import configure
from tests.factories import MailAccountFactory
from tests.mailbox.factories import EmailFactory, mapped_folder

pytestmark = pytest.mark.django_db(transaction=True)

ERRORS_DOC = Path(__file__).resolve().parents[2] / "docs" / "errors.md"
UNDESCRIBED = 54001


def documented_caller_codes() -> frozenset[int]:
    """The codes docs/errors.md lists that the MCP tools can raise (51000-57999), less 54001."""
    codes = {int(code) for code in re.findall(r"^\| (5[1-7]\d{3}) \|", ERRORS_DOC.read_text(), re.MULTILINE)}
    return frozenset(codes - {UNDESCRIBED})


class InlineRunner(UseCaseRunner):
    """Run the use case on the event loop's thread, then close what it opened (see the docstring)."""

    def __init__(self) -> None:
        super().__init__(max_workers=1)

    async def run(self, function, *args, **kwargs):
        try:
            return function(*args, **kwargs)
        finally:
            connections.close_all()


# Names the test mailbox has (and near them), mixed into the names a schema allows, so valid
# inputs reach real scopes: readable, hidden, junk, a role nobody carries, nothing at all.
MAILBOX_NAMES = {
    "accounts": ["billing", "Billing", "BILLING"],
    "folders": ["inbox", "INBOX", "junk", "hidden", "role:junk", "role:inbox", "role:sent", "nothing"],
}


def from_schema(schema: dict[str, Any], name: str = "") -> st.SearchStrategy[Any]:
    """Instances of `schema`: the keywords the tools' input schemas use, and only those.

    A keyword this does not know fails the test, so a schema that grows a new one is not
    silently fuzzed as if it were absent. `name` is the property's (see MAILBOX_NAMES).
    """
    known = {"type", "properties", "additionalProperties", "required", "items", "minItems", "maxItems"}
    known |= {"minLength", "maxLength", "enum", "format", "default", "description", "minimum", "maximum"}
    unknown = set(schema) - known
    assert not unknown, f"from_schema does not read {sorted(unknown)}"
    if "enum" in schema:
        return st.sampled_from(schema["enum"])
    kind = schema.get("type")
    if kind == "object":
        properties = schema.get("properties", {})
        required = set(schema.get("required", ()))
        return st.fixed_dictionaries(
            {name: from_schema(properties[name]) for name in sorted(required)},
            optional={
                name: from_schema(sub) for name, sub in sorted(properties.items()) if name not in required
            },
        )
    if kind == "array":
        items = from_schema(schema.get("items", {"type": "string"}), name)
        if name in MAILBOX_NAMES:
            items = st.one_of(st.sampled_from(MAILBOX_NAMES[name]), items)
        return st.lists(
            items,
            min_size=schema.get("minItems", 0),
            max_size=min(schema.get("maxItems", 10), 70),
        )
    if kind == "string":
        if schema.get("format") == "date-time":
            return st.datetimes(timezones=st.sampled_from([UTC, timezone(timedelta(hours=-7))])).map(
                lambda moment: moment.isoformat()
            )
        if schema.get("format") == "uuid":
            return st.uuids().map(str)
        sizes = {"min_size": schema.get("minLength", 0), "max_size": min(schema.get("maxLength", 50), 1100)}
        # Printable text is what callers mostly send and what gets past the use case's own
        # checks to the reads behind them; any text, control characters included, is the rest.
        printable = st.text(alphabet=st.characters(exclude_categories=("Cc", "Cs")), **sizes)
        if sizes["min_size"]:  # a required text is not blank either
            printable = printable.filter(str.strip)
        text = st.one_of(printable, st.text(**sizes))
        if name.endswith("Address"):
            return st.one_of(st.emails().filter(lambda a: len(a) <= sizes["max_size"]), text)
        return text
    if kind == "boolean":
        return st.booleans()
    if kind == "integer":
        return st.integers(min_value=schema.get("minimum"), max_value=schema.get("maximum"))
    raise AssertionError(f"from_schema does not read type {kind!r}")


# Values a caller might send in place of any argument: wrong types, bounds, real names.
ODD_VALUES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=False),
    st.text(max_size=30),
    st.sampled_from(
        ["", " ", "\x00", "a\nb", "x" * 257, "x" * 1001, "2025-13-01T00:00:00Z", "role:", "role:nope"]
    ),
    st.lists(
        st.sampled_from(
            ["inbox", "INBOX", "role:junk", "role:sent", "hidden", "billing", "Billing", "nobody"]
        )
    ),
    st.lists(st.text(max_size=5), min_size=60, max_size=70),
    st.lists(st.uuids().map(str), min_size=0, max_size=12),
    st.dictionaries(st.text(max_size=5), st.integers(), max_size=2),
)


@st.composite
def near_misses(draw: st.DrawFn, schema: dict[str, Any]) -> dict[str, Any]:
    """A valid instance of `schema` with one fault: a property replaced, added or removed."""
    properties = sorted(schema.get("properties", {}))
    spoiled = dict(draw(from_schema(schema)))
    fault = draw(st.sampled_from(["replace", "unknown", "remove"]))
    if fault == "replace" and properties:
        spoiled[draw(st.sampled_from(properties))] = draw(ODD_VALUES)
    elif fault == "remove" and spoiled:
        spoiled.pop(draw(st.sampled_from(sorted(spoiled))))
    else:
        spoiled[draw(st.text(min_size=1, max_size=12))] = draw(ODD_VALUES)
    return spoiled


@pytest.fixture
def bridge(monkeypatch, settings) -> Bridge:
    # The use cases run on the event loop's thread here (InlineRunner): Django must allow it.
    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
    configure(settings, embedding_provider="none")
    account = MailAccountFactory(account_id="billing", display_name="Billing")
    inbox = mapped_folder(account, "inbox", FolderRole.INBOX)
    mapped_folder(account, "junk", FolderRole.JUNK)
    mapped_folder(account, "hidden", visible_to_tools=False)
    EmailFactory(folder=inbox, subject="Insurance claim settled", body="The insurer agreed to pay.")
    refresh_term_stats()
    inline = InlineRunner()
    return Bridge(TOOLS, inline, inline)  # quick and model-bound tools alike


def published_schema(bridge: Bridge, name: str) -> dict[str, Any]:
    schema = bridge.input_schema(name)
    assert schema is not None
    return json.loads(json.dumps(schema))  # the JSON tools/list carries


def call(bridge: Bridge, name: str, arguments: dict[str, Any]):
    params = CallToolRequestParams(name=name, arguments=arguments)
    return anyio.run(bridge.call_tool, None, params)


def check_outcome(result, name: str, arguments: dict[str, Any]) -> str:
    """Check one call's result; return "ok" or the refusal's code."""
    text = result.content[0].text
    if result.is_error:
        match = re.fullmatch(r"MailFathom error (\d{5}): .+", text, re.DOTALL)
        assert match, (name, text)
        code = int(match.group(1))
        assert code != UNDESCRIBED, (name, sorted(arguments))
        assert code in documented_caller_codes(), (name, code)
        return str(code)
    assert isinstance(result.structured_content, dict) and json.loads(text) == result.structured_content
    return "ok"


@pytest.mark.parametrize("tool", [tool.name for tool in TOOLS])
def test_published_schema_inputs_and_near_misses_are_answered_or_refused_with_a_documented_code(
    bridge, tool, caplog
):
    schema = published_schema(bridge, tool)
    inputs = st.one_of(from_schema(schema), near_misses(schema))
    outcomes: Counter[str] = Counter()

    @hypothesis_settings(
        max_examples=80,
        deadline=None,
        derandomize=True,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much, HealthCheck.data_too_large],
    )
    @given(arguments=inputs)
    def run(arguments: dict[str, Any]) -> None:
        outcomes[check_outcome(call(bridge, tool, arguments), tool, arguments)] += 1

    with caplog.at_level(logging.ERROR, logger="mailfathom.mcp"):
        run()
    assert not [record for record in caplog.records if record.levelno >= logging.ERROR]
    # The inputs reached more than one answer (ask_mail and draft_reply are inactive here:
    # refusals only).
    assert len(outcomes) >= 2, outcomes
    assert tool in ("ask_mail", "draft_reply") or outcomes["ok"] > 0, outcomes


def test_a_failure_would_be_noticed(bridge):
    """The check itself can fail: an undescribed failure is 54001, and check_outcome says so."""

    def broken(**_kwargs):
        raise RuntimeError("boom")

    listed = call(bridge, "list_accounts", {}).structured_content  # the runner reads this test's rows
    assert [account["accountId"] for account in listed["accounts"]] == ["billing"]
    spec = next(tool for tool in TOOLS if tool.name == "list_accounts")
    inline = InlineRunner()
    failing = Bridge((dataclasses.replace(spec, use_case=broken),), inline, inline)
    with pytest.raises(AssertionError):
        check_outcome(call(failing, "list_accounts", {}), "list_accounts", {})

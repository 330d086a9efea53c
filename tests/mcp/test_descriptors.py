"""tools/list as a client reads it: pinned whole, and checked for what it must never offer.

The snapshot holds the full advertised output: names, titles, descriptions, every input
property and its description, the output schemas, the annotations and every enumeration's
wire spelling. A descriptor that drifts fails here; to change one deliberately, run this
module with MAILFATHOM_UPDATE_MCP_SNAPSHOT=1 and review the diff of the snapshot file.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from mailfathom.mcp.schemas import DESCRIPTIONS
from mailfathom.mcp.tools import ASK_MAIL, TOOLS
from tests.mcp.conftest import INITIALIZE, list_tools, post

pytestmark = pytest.mark.django_db(transaction=True)

SNAPSHOT = Path(__file__).parent / "snapshots" / "tools_list.json"
UPDATE = os.environ.get("MAILFATHOM_UPDATE_MCP_SNAPSHOT") == "1"


@pytest.fixture
def advertised(mcp_server, api_key) -> list[dict[str, Any]]:
    return list_tools(mcp_server, api_key)


def _nodes(schema: Any) -> Iterator[dict[str, Any]]:
    """Every schema object inside `schema` (properties, items, $defs, anyOf members...)."""
    if isinstance(schema, dict):
        yield schema
        for value in schema.values():
            yield from _nodes(value)
    elif isinstance(schema, list):
        for value in schema:
            yield from _nodes(value)


def _property_names(schema: dict[str, Any]) -> set[str]:
    return {name for node in _nodes(schema) for name in node.get("properties", {})}


def test_tools_list_matches_the_pinned_snapshot(advertised):
    text = json.dumps(advertised, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
    if UPDATE:
        SNAPSHOT.parent.mkdir(exist_ok=True)
        SNAPSHOT.write_text(text)
    assert SNAPSHOT.exists(), "no snapshot yet: run with MAILFATHOM_UPDATE_MCP_SNAPSHOT=1"
    assert json.loads(text) == json.loads(SNAPSHOT.read_text())


def test_the_initialize_handshake_era_lists_the_same_tools(mcp_server, api_key, advertised):
    assert list_tools(mcp_server, api_key, mode="legacy") == advertised


def test_initialize_names_the_server_and_offers_tools(mcp_server, api_key):
    status, body, _ = post(mcp_server, INITIALIZE, {"Authorization": f"Bearer {api_key}"})
    assert status == 200
    result = json.loads(body)["result"]
    assert result["serverInfo"]["name"] == "mailfathom"
    assert "tools" in result["capabilities"]
    assert "list_accounts" in result["instructions"]


def test_exactly_the_four_read_tools_are_advertised_with_their_titles(advertised):
    assert [(tool["name"], tool["title"]) for tool in advertised] == [
        ("list_accounts", "List accounts"),
        ("list_emails", "List emails"),
        ("get_email_content", "Get email content"),
        ("search_emails", "Search emails"),
    ]


def test_every_tool_is_annotated_read_only_idempotent_and_closed_world(advertised):
    for tool in advertised:
        annotations = tool["annotations"]
        assert annotations["readOnlyHint"] is True, tool["name"]
        assert annotations["destructiveHint"] is False, tool["name"]
        assert annotations["idempotentHint"] is True, tool["name"]
        assert annotations["openWorldHint"] is False, tool["name"]


def test_descriptions_say_local_copy_changes_nothing_and_bounds(advertised):
    for tool in advertised:
        description = tool["description"]
        assert "local copy" in description, tool["name"]
        assert "changes nothing" in description, tool["name"]
        assert "at most" in description or "bounded" in description, tool["name"]


def test_every_input_property_is_top_level_camel_case_and_described(advertised):
    for tool in advertised:
        schema = tool["inputSchema"]
        assert schema["type"] == "object"
        assert schema["additionalProperties"] is False
        for name, prop in schema["properties"].items():
            assert name[0].islower() and "_" not in name, (tool["name"], name)
            assert prop.get("description"), (tool["name"], name)
            assert "properties" not in prop, (tool["name"], name)  # no nested argument objects


def test_every_output_property_is_camel_case_and_described(advertised):
    for tool in advertised:
        for node in _nodes(tool["outputSchema"]):
            for name, prop in node.get("properties", {}).items():
                assert "_" not in name, (tool["name"], name)
                assert prop.get("description"), (tool["name"], name)


def test_the_description_table_names_no_property_the_models_lack():
    known = {name for tool in TOOLS for name in _defs_and_properties(tool)}
    described = {(model, prop) for model, props in DESCRIPTIONS.items() for prop in props if prop}
    assert described - known == set()


def _defs_and_properties(tool) -> Iterator[tuple[str, str]]:
    schema = tool.result_model.model_json_schema(by_alias=True, mode="serialization")
    for model, node in {tool.result_model.__name__: schema, **schema.get("$defs", {})}.items():
        for prop in node.get("properties", {}):
            yield model, prop


def test_no_output_property_can_hold_bytes_or_base64(advertised):
    for tool in advertised:
        for node in _nodes(tool["outputSchema"]):
            assert node.get("format") not in ("binary", "byte", "base64"), tool["name"]
            assert "contentEncoding" not in node, tool["name"]
            assert "contentMediaType" not in node, tool["name"]
        names = {name.lower() for name in _property_names(tool["outputSchema"])}
        assert not names & {"bytes", "data", "blob", "base64", "raw", "rawmime", "content64"}, tool["name"]


def test_list_accounts_publishes_no_connection_detail(advertised):
    [tool] = [tool for tool in advertised if tool["name"] == "list_accounts"]
    names = {name.lower() for name in _property_names(tool["outputSchema"])}
    forbidden = ("host", "port", "user", "username", "password", "secret", "credential", "security")
    assert not [name for name in names if any(word in name for word in forbidden)]
    assert tool["inputSchema"]["properties"] == {}


def test_search_emails_offers_no_cursor_offset_or_extract_widening(advertised):
    [tool] = [tool for tool in advertised if tool["name"] == "search_emails"]
    arguments = {name.lower() for name in tool["inputSchema"]["properties"]}
    assert not arguments & {"cursor", "offset", "page", "pagesize", "skip"}
    assert not [name for name in arguments if "snippet" in name or "extract" in name or "context" in name]
    assert tool["inputSchema"]["required"] == ["queryText"]


def test_enumerations_travel_as_camel_case_names(advertised):
    spellings = {
        value
        for tool in advertised
        for schema in (tool["inputSchema"], tool["outputSchema"])
        for node in _nodes(schema)
        for value in node.get("enum", ())
    }
    assert {"newestFirst", "oldestFirst", "lexical", "hybrid", "exceededSizeLimit"} <= spellings
    assert all(isinstance(value, str) and "_" not in value for value in spellings)


# --- ask_mail, listed only where answering is available (not on this session's server) -------

ASK_MAIL_SNAPSHOT = Path(__file__).parent / "snapshots" / "ask_mail.json"


def test_ask_mail_descriptor_matches_its_pinned_snapshot_and_the_conventions():
    descriptor = ASK_MAIL.descriptor().model_dump(mode="json", by_alias=True, exclude_none=True)
    text = json.dumps(descriptor, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
    if UPDATE:
        ASK_MAIL_SNAPSHOT.write_text(text)
    assert json.loads(text) == json.loads(ASK_MAIL_SNAPSHOT.read_text())
    test_every_input_property_is_top_level_camel_case_and_described([descriptor])
    test_every_output_property_is_camel_case_and_described([descriptor])
    assert descriptor["annotations"] == {
        "title": "Ask about mail",
        "readOnlyHint": True,
        "destructiveHint": False,
        "idempotentHint": True,
        "openWorldHint": False,
    }
    assert set(descriptor["inputSchema"]["properties"]) == {"question", "accounts", "folders"}

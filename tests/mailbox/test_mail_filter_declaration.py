"""The mail filter is declared once: every schema and parser that takes a filter follows it.

The published schemas (list_emails, search_emails, search_mail) are compared with the
declaration itself, and a filter declared only here, on a subclass of MailFilter built in
this test, shows up in all of them and is parsed on both paths without any other edit.
"""

from __future__ import annotations

import dataclasses
import json
import re

import pytest

from answering.lookup import SEARCH_MAIL, LookupRefused, parse_lookup, search_mail_tool
from mailbox.services.mail_filter import FIELDS, MailFilter, declare, declared, offered_to_model
from mailfathom.core.errors import FILTER_REFUSED, MailFathomError
from mailfathom.mcp.arguments import convert_arguments
from mailfathom.mcp.tools import LIST_EMAILS, SEARCH_EMAILS, list_emails_tool, search_emails_tool


@dataclasses.dataclass(frozen=True)
class FilterWithMore(MailFilter):
    """Two filters that exist only in this test: one offered to the model, one not."""

    is_flagged: bool | None = declare(
        wire="isFlagged",
        schema={"type": "boolean"},
        mcp_description="Only emails flagged (true) or not flagged (false). Absent: either.",
        model_description="Only flagged (true) or unflagged (false) mail.",
    )
    include_trash: bool = declare(
        wire="includeTrashMail",
        schema={"type": "boolean", "default": False},
        mcp_description="Whether the trash folder takes part. Absent: false.",
        offered_to_model=False,
        default=False,
    )


def _properties(tool) -> dict:
    return tool.descriptor().input_schema["properties"]


# --- the declaration as it stands ------------------------------------------------------------


def test_every_field_of_mail_filter_is_declared_once_with_a_camel_case_wire_name():
    assert [field.name for field in FIELDS] == [field.name for field in dataclasses.fields(MailFilter)]
    wires = [field.wire for field in FIELDS]
    assert len(set(wires)) == len(wires)
    assert all(re.fullmatch(r"[a-z][a-zA-Z]*", wire) for wire in wires)


def test_only_the_junk_switch_is_kept_from_ask_mail():
    assert [field.wire for field in FIELDS if not field.offered_to_model] == ["includeJunkMail"]


@pytest.mark.parametrize("tool", [LIST_EMAILS, SEARCH_EMAILS], ids=lambda tool: tool.name)
def test_the_mcp_tools_publish_each_declared_filter_with_its_own_schema(tool):
    properties = _properties(tool)
    for field in FIELDS:
        published = dict(properties[field.wire])
        description = published.pop("description")
        assert published == field.schema
        # The declared text, with only its two placeholders filled.
        pattern = re.escape(field.mcp_description)
        pattern = pattern.replace(re.escape("{verbing}"), "(Listing|Searching)")
        pattern = pattern.replace(re.escape("{subject_note}"), ".*")
        assert re.fullmatch(pattern, description), field.wire


def test_search_mail_publishes_the_offered_filters_with_the_same_schema_and_the_model_text():
    properties = SEARCH_MAIL.parameters["properties"]
    assert list(properties) == ["queryText", *(field.wire for field in offered_to_model())]
    for field in offered_to_model():
        assert properties[field.wire] == {**field.schema, "description": field.model_description}
    assert "includeJunkMail" not in properties


# --- a filter added to the declaration -------------------------------------------------------


def test_a_declared_filter_appears_in_list_emails_and_search_emails_without_another_edit():
    for tool in (list_emails_tool(FilterWithMore), search_emails_tool(FilterWithMore)):
        properties = _properties(tool)
        assert properties["isFlagged"] == {
            "type": "boolean",
            "description": "Only emails flagged (true) or not flagged (false). Absent: either.",
        }
        assert properties["includeTrashMail"]["default"] is False
        converted = convert_arguments(tool.arguments, {"isFlagged": True, "senderAddress": "a@b.example"})
        mail_filter = converted["mail_filter"]
        assert isinstance(mail_filter, FilterWithMore)
        assert (mail_filter.is_flagged, mail_filter.sender_address) == (True, "a@b.example")
        with pytest.raises(MailFathomError) as refused:
            convert_arguments(tool.arguments, {"isFlagged": "yes"})
        assert refused.value.code == FILTER_REFUSED
        assert refused.value.message == "The isFlagged argument must be true or false."


def test_a_declared_filter_reaches_search_mail_only_when_it_is_offered_to_the_model():
    parameters = search_mail_tool(FilterWithMore).parameters["properties"]
    assert parameters["isFlagged"] == {
        "type": "boolean",
        "description": "Only flagged (true) or unflagged (false) mail.",
    }
    assert "includeTrashMail" not in parameters

    lookup = parse_lookup(json.dumps({"queryText": "insurer", "isFlagged": False}), FilterWithMore)
    assert lookup.mail_filter.is_flagged is False
    assert lookup.published_filters() == {"isFlagged": "false"}
    with pytest.raises(LookupRefused) as refused:
        parse_lookup(json.dumps({"queryText": "insurer", "includeTrashMail": True}), FilterWithMore)
    assert refused.value.argument == "includeTrashMail"


def test_the_declared_filters_of_the_extension_follow_the_base_ones_in_order():
    assert [field.wire for field in declared(FilterWithMore)] == [
        *(field.wire for field in FIELDS),
        "isFlagged",
        "includeTrashMail",
    ]


def test_a_filter_of_a_json_type_no_reader_knows_is_refused_when_it_is_published():
    @dataclasses.dataclass(frozen=True)
    class Numbered(MailFilter):
        size_at_least: int | None = declare(
            wire="sizeAtLeast",
            schema={"type": "integer"},
            mcp_description="Only emails of at least this many bytes.",
            model_description="Only mail of at least this many bytes.",
        )

    with pytest.raises(TypeError, match="sizeAtLeast"):
        list_emails_tool(Numbered)

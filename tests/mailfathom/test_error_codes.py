"""The table of error codes (mailfathom.core.errors.Code) and docs/errors.md say the same thing."""

import re
from pathlib import Path

from mailfathom.core.errors import CALLER_CATEGORY, MCP_AS_UNDESCRIBED, Code, MailFathomError, http_status

DOC = Path(__file__).resolve().parents[2] / "docs" / "errors.md"
_ROW = re.compile(r"^\| ([0-9][0-9,–\- ]*[0-9]) \|(.*)\|\s*$")


def _documented() -> dict[int, str]:
    """Each code docs/errors.md's table lists, with the text of its row(s)."""
    rows: dict[int, str] = {}
    for line in DOC.read_text().splitlines():
        match = _ROW.match(line)
        if match is None:
            continue
        for part in match.group(1).split(","):
            ends = [int(end) for end in re.split(r"[–-]", part.strip())]
            for code in range(ends[0], ends[-1] + 1):
                rows[code] = rows.get(code, "") + match.group(2)
    return rows


def test_docs_list_exactly_the_codes_of_the_table():
    assert set(_documented()) == {int(code) for code in Code}


def test_docs_mark_internal_exactly_the_codes_outside_the_caller_category():
    documented = _documented()
    for code in Code:
        says_internal = "internal" in documented[code]
        assert says_internal == (not code.is_published), f"{code.value} ({code.name})"


def test_each_code_has_one_name_a_sentence_and_its_mappings():
    assert len({int(code) for code in Code}) == len(Code)  # no alias: one name a code
    for code in Code:
        assert code.sentence.strip()
        if code.is_published:
            assert code.value in CALLER_CATEGORY
        else:
            assert code.http_status == 500 and code.mcp == MCP_AS_UNDESCRIBED
    assert http_status(Code.FILTER_REFUSED) == 400
    assert http_status(Code.UNDESCRIBED) == 500
    assert http_status(Code.DEPENDENCY_UNAVAILABLE) == 503


def test_an_error_holds_its_code_as_a_plain_number():
    error = MailFathomError(Code.CURSOR_NOT_ISSUED, Code.CURSOR_NOT_ISSUED.sentence)
    assert type(error.code) is int and error.code == 52001
    assert str(error) == "MailFathom error 52001: " + Code.CURSOR_NOT_ISSUED.sentence

"""One rule for "one whole email address", which search, filters, erasure, holds and case exports share."""

import pytest

from mailfathom.core.text import MAX_ADDRESS_LENGTH, is_whole_address


@pytest.mark.parametrize("text", ["a@b", "Dana.Subject@Example.ORG", "x" * 64 + "@" + "d" * 255])
def test_a_whole_address_passes(text):
    assert is_whole_address(text)


@pytest.mark.parametrize(
    "text",
    [
        "",
        "@b",
        "a@",
        "no-at-sign",
        "a b@c",
        "a@b\n",
        "a\x00@b",
        "a\x85@b",
        "a\x7f@b",
        "x" * 64 + "@" + "d" * 256,
    ],
)
def test_anything_else_is_refused(text):
    assert not is_whole_address(text)


def test_a_lower_bound_may_be_given():
    assert len("ab@cd") < MAX_ADDRESS_LENGTH
    assert not is_whole_address("ab@cd", longest=4)

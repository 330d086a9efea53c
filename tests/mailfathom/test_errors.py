"""The one error type and the category rule every boundary applies."""

import pytest

from mailfathom.core.errors import MailFathomError, published


def test_caller_category_code_passes_through_with_its_sentence():
    error = MailFathomError(53001, "Mail account 'x' is not accessible.")
    assert published(error) is error
    assert str(error) == "MailFathom error 53001: Mail account 'x' is not accessible."


@pytest.mark.parametrize("code", [71001, 72001, 73001, 81001, 50999, 59000])
def test_other_categories_collapse_to_54001(code):
    shown = published(MailFathomError(code, "internal detail about imap.example.org"))
    assert shown.code == 54001
    assert "imap.example.org" not in str(shown)


def test_unexpected_exception_collapses_to_54001():
    shown = published(RuntimeError("password=hunter2"))
    assert shown.code == 54001
    assert "hunter2" not in str(shown)


@pytest.mark.parametrize("code", [0, 1234, 100000])
def test_code_must_have_five_digits(code):
    with pytest.raises(ValueError):
        MailFathomError(code, "x")

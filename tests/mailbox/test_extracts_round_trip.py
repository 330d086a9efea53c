"""Extracts are the body's own text: nothing that looks like markup is dropped from them.

ts_headline takes `<email>` in `contact@example.com<email>Here` for a tag and leaves a space
where it stood; search_emails' snippets and ask_mail's passages promise the mail's text as
written. The property: an extract less its ** markers and a trailing "…" is a substring of
the body, and it holds at most the characters asked for.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st

from accounts.models import FolderRole
from mailbox.services.lexical_search import highlight
from mailbox.services.passages import retrieve_passages
from mailbox.services.search import search_emails
from tests.configure import configure
from tests.factories import MailAccountFactory
from tests.mailbox.factories import EmailFactory, mapped_folder

pytestmark = pytest.mark.django_db

MARKUP_LIKE = "contact@example.com<email>Here"


@pytest.fixture
def inbox(settings):
    configure(settings, embedding_provider="none")
    return mapped_folder(MailAccountFactory(account_id="support"), "inbox", FolderRole.INBOX)


def test_a_snippet_keeps_text_that_looks_like_markup(inbox):
    EmailFactory(folder=inbox, subject="Reach us", body=f"Write to {MARKUP_LIKE} is our invoice desk.")

    [match] = search_emails("invoice").matches

    assert "contact@example.com<email>Here" in match.snippets[0]
    assert "**invoice**" in match.snippets[0]


def test_a_passage_extract_keeps_text_that_looks_like_markup(inbox):
    filler = " ".join(f"word{n}" for n in range(200))
    body = f"{filler} Write to {MARKUP_LIKE} is our invoice desk <b>&amp; more</b>. {filler}"
    EmailFactory(folder=inbox, subject="Reach us", body=body)

    [passage] = retrieve_passages(
        "invoice", accounts=None, folders=None, limit=1, max_characters=2000
    ).passages

    assert "contact@example.com<email>Here" in passage.extract and "**" not in passage.extract
    assert len(passage.extract) <= 2000


def test_literal_asterisks_in_mail_survive_in_passages(inbox):
    filler = " ".join(f"word{n}" for n in range(200))
    EmailFactory(folder=inbox, subject="Stars", body=f"{filler} the **urgent** invoice {filler}")

    [passage] = retrieve_passages(
        "invoice", accounts=None, folders=None, limit=1, max_characters=2000
    ).passages

    assert "**urgent** invoice" in passage.extract


def _unmarked(extract: str) -> str:
    return extract.removesuffix("…").replace("**", "")


# Words the query can find, and text around them that a tag parser would take apart.
WORDS = st.sampled_from(["invoice", "payment", "email", "here", "b", "claim", "x1"])
NOISE = st.sampled_from(["<", ">", "&", "&amp;", "</b>", "<email>", "@", "\n", "  ", "-", "/", ";", "'", '"'])
BODIES = st.lists(st.one_of(WORDS, NOISE, st.text(alphabet="abcäß<>&;:/ \n\t", max_size=6)), max_size=80)


@hypothesis_settings(
    max_examples=60,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(parts=BODIES, query=st.lists(WORDS, min_size=1, max_size=3), limit=st.integers(20, 240))
def test_an_extract_less_its_markers_is_a_substring_of_the_body(inbox, parts, query, limit):
    body = " ".join(parts)
    email = EmailFactory(folder=inbox, subject="s", body=body)

    extracts = highlight([str(email.pk)], " ".join(query), 3, limit).get(str(email.pk), [])

    for extract in extracts:
        assert _unmarked(extract) in body
        assert len(_unmarked(extract)) <= limit
        assert extract.count("**") % 2 == 0

"""What of a body is embedded: the author's own words, without quotations, signature or footer."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mailbox.models import Passage
from mailbox.services.embedding import embed_pending, passage_text
from mailbox.services.own_words import _END, _QUOTED, own_words, quoted_part
from tests.configure import configure, scripted_embeddings
from tests.factories import MailAccountFactory
from tests.mailbox.factories import EmailFactory, mapped_folder
from tests.support import isolated_provider_health


def test_quoted_lines_and_the_attribution_are_left_out():
    body = (
        "Sounds good.\n\nOn Mon, 2 Sep 2002, Anna <anna@example.org> wrote:\n"
        "> The train leaves at 8.\n> OK?\n\nSee you there."
    )
    assert own_words(body) == "Sounds good.\n\nSee you there."


def test_a_german_attribution_and_pipe_quotes_are_left_out():
    body = "Passt.\nAm Montag schrieb Anna Müller:\n| Der Zug fährt um 8.\nBis dann."
    assert own_words(body) == "Passt.\n\nBis dann."


@pytest.mark.parametrize(
    "end",
    ["-----Original Message-----", "-- ", "--", "______________________________________"],
)
def test_the_text_ends_at_a_quoted_original_a_signature_or_a_footer(end):
    assert own_words(f"Top-posted answer.\n\n{end}\nFrom: Anna\nThe old text.") == "Top-posted answer."


def test_a_dash_line_inside_a_sentence_is_no_signature():
    body = "Figures -- as promised -- below.\n\nRevenue rose."
    assert own_words(body) == body


def test_a_body_of_nothing_but_quotation_is_kept_whole():
    assert own_words("> forwarded\n> text") == "> forwarded\n> text"
    assert own_words("-- \nonly a signature") == "-- \nonly a signature"


def test_the_quoted_part_is_the_quote_lines_and_everything_from_the_original_on():
    body = "Yes.\n> the plan\nmine\n| piped\n-----Original Message-----\nold text"
    assert quoted_part(body) == "> the plan\n| piped\n-----Original Message-----\nold text"
    assert quoted_part("Nothing quoted here.") == "\n"


_PIECES = ["word", " ", "\n", ">", "|", "-", "--", "-- ", "_", "_____", "Original Message", "\t", "x>y"]


@given(st.lists(st.sampled_from(_PIECES), max_size=40).map("".join))
def test_the_quoted_part_looks_for_markers_first_without_changing_its_answer(body):
    # quoted_part skips a pattern when the characters it needs are absent; the answer must
    # be the one the two patterns give when always run.
    end = _END.search(body)
    head, tail = (body[: end.start()], body[end.start() :]) if end else (body, "")
    assert quoted_part(body) == "\n".join(_QUOTED.findall(head)) + "\n" + tail


def test_the_passage_is_the_subject_and_own_words_cut_to_the_window(settings):
    configure(settings, embedding_window_characters=200)
    body = "Yes.\n" + "> quoted line\n" * 50 + "word " * 100
    text = passage_text("Re: plan", body)
    assert text.startswith("Re: plan\n\nYes.\n\nword word") and len(text) == 200
    assert ">" not in text


@pytest.mark.django_db
def test_the_sweep_embeds_own_words_beyond_a_long_quotation(settings, scripted):
    """The sweep reads enough of the body to fill the window after a long quotation."""
    with isolated_provider_health(settings, "own-words"):
        configure(settings, **scripted_embeddings(scripted), embedding_window_characters=300)
        inbox = mapped_folder(MailAccountFactory(account_id="team"), "inbox")
        quoted = "> " + "q" * 70 + "\n"
        email = EmailFactory(folder=inbox, subject="Re: x", body=quoted * 10 + "The answer is Friday.")
        embed_pending()
        request = scripted.requests[0]
        assert request.inputs == ["Re: x\n\nThe answer is Friday."]
        assert Passage.objects.get(email=email).characters == len("Re: x\n\nThe answer is Friday.")

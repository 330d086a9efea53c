"""Hybrid search given a separate lexical string: it is ranked lexically and never embedded.

Reply drafting hands one search call two strings (docs/operations/drafting.md, gather): the
condensed query to the vector arm and the raw mail to the lexical arm. search_emails keeps
one string for both.
"""

from __future__ import annotations

import pytest

from accounts.models import FolderRole
from mailbox.services.embedding import embed_pending
from mailbox.services.lexical_search import refresh_term_stats
from mailbox.services.passages import retrieve_passages
from tests.configure import configure, scripted_embeddings
from tests.factories import MailAccountFactory
from tests.mailbox.factories import EmailFactory, mapped_folder

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("own_provider_health")]


def test_the_lexical_string_is_ranked_and_only_the_query_is_embedded(settings, scripted):
    configure(settings, **scripted_embeddings(scripted, embedding_max_retries=0))
    inbox = mapped_folder(MailAccountFactory(account_id="team"), "inbox", FolderRole.INBOX)
    wanted = EmailFactory(folder=inbox, subject="Order ZX-88120", body="Your order ZX-88120 shipped today.")
    EmailFactory(folder=inbox, subject="Lunch", body="Shall we have lunch?")
    embed_pending()
    refresh_term_stats()
    before = len(scripted.recorded("embeddings"))

    retrieval = retrieve_passages(
        "delivery status",
        accounts=["team"],
        folders=None,
        limit=5,
        max_characters=400,
        lexical_query_text="Where is my order ZX-88120?\n\nKind regards,\nPetra Quist",
    )

    assert retrieval.retrieval_mode == "hybrid"
    assert retrieval.passages[0].stored_email_id == str(wanted.pk)
    embedded = [text for request in scripted.recorded("embeddings")[before:] for text in request.inputs]
    assert len(embedded) == 1 and "delivery status" in embedded[0]
    assert not any("ZX-88120" in text or "Quist" in text for text in embedded)

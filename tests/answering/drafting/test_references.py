"""Reference documents: stored, chunked, indexed and embedded like mail; asked only with rerank on."""

from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import connection
from django.test.utils import CaptureQueriesContext

from answering.drafting.pipeline import ComposedDraft, compose_draft
from answering.drafting.references import search_references
from answering.models import ReferenceChunk, ReferenceDocument, Verdict
from answering.services.reference_documents import chunks_of, store_reference_document
from tests.answering.drafting.support import GENERATE, LETTER, RERANK
from tests.configure import configure
from tests.factories import MailAccountFactory
from tests.providers.openai_server import respond, text

pytestmark = pytest.mark.django_db

PRICE_LIST = (
    "Oak & Iron price list 2024\n\nOak table, 180 cm: 1,250 euros.\n\nDelivery within Germany: 79 euros, "
    "free above 2,000 euros.\n\nAssembly on site: 120 euros."
)
WITH_DELIVERY_PRICE = LETTER.replace("by 14 March.", "by 14 March. Delivery costs 79 euros.")


def test_text_is_cut_into_bounded_chunks_at_paragraphs():
    text_ = "\n\n".join(["a" * 500, "b" * 500, "c" * 500, "d " * 1000])
    pieces = chunks_of(text_, size=1200)
    assert all(len(piece) <= 1200 for piece in pieces)
    assert pieces[0] == "a" * 500 + "\n\n" + "b" * 500
    assert "".join(pieces).replace("\n", "").replace(" ", "") == text_.replace("\n", "").replace(" ", "")


def test_a_stored_document_is_chunked_embedded_and_found_by_either_string(shop, drafting):
    document = store_reference_document(shop.account, "Price list", PRICE_LIST)

    chunks = list(document.chunks.all())
    assert chunks and all(chunk.profile_id is not None for chunk in chunks), "embedded like mail"
    found = search_references(
        account_pk=shop.account.pk,
        account_id="shop",
        condensed="delivery costs",
        raw="How much is delivery of the oak table?",
        limit=5,
        max_characters=1200,
    )
    assert found and found[0].stored_email_id.startswith("reference:")
    assert "79 euros" in found[0].extract and found[0].subject == "Price list"


def test_with_rerank_off_reference_documents_are_never_queried(model, shop):
    store_reference_document(shop.account, "Price list", PRICE_LIST)

    with CaptureQueriesContext(connection) as queries:
        result = compose_draft(shop.answered)

    assert isinstance(result, ComposedDraft)
    assert not [q for q in queries.captured_queries if ReferenceChunk._meta.db_table in q["sql"]]
    assert "price list" not in model.user_turn(GENERATE).lower()


def test_with_rerank_on_a_reference_is_judged_carried_and_grounds_a_figure(settings, model, shop):
    configure(settings, drafting_rerank_enabled=True)
    store_reference_document(shop.account, "Price list", PRICE_LIST)
    model.script(GENERATE, text(WITH_DELIVERY_PRICE))

    result = compose_draft(shop.answered)

    judged = [model.user_turn(RERANK, index) for index in range(len(model.requests[RERANK]))]
    assert any('folder="reference"' in turn for turn in judged)
    request = model.user_turn(GENERATE)
    assert 'folder="reference"' in request and "Delivery within Germany: 79 euros" in request
    assert result.verdict == Verdict.READY, result.reasons
    assert all(":" not in str(source) for source in result.source_ids)


def test_sources_are_ordered_by_their_judgement_so_fit_drops_the_worst(settings, model, shop):
    configure(settings, drafting_rerank_enabled=True)
    store_reference_document(shop.account, "Price list", PRICE_LIST)

    def score(request):
        content = request["messages"][-1]["content"]
        return text("95" if 'folder="reference"' in content else "60")

    model.defaults[RERANK] = respond(score)

    compose_draft(shop.answered)

    request = model.user_turn(GENERATE)
    assert request.index('folder="reference"') < request.index("Dispatch note ZX-88120")


def test_a_document_is_uploaded_in_admin(admin_client, drafting):
    account = MailAccountFactory(account_id="upload")
    upload = SimpleUploadedFile("prices.txt", PRICE_LIST.encode(), content_type="text/plain")

    response = admin_client.post(
        "/admin/answering/referencedocument/add/",
        {"account": account.pk, "title": "Price list", "text": "", "upload": upload},
    )

    assert response.status_code == 302, response.content[:2000]
    document = ReferenceDocument.objects.get()
    assert document.text == PRICE_LIST and document.chunks.count() >= 1

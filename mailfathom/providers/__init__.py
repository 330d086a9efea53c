"""OpenAI-compatible chat and embedding clients, the local embedder, and their resilience.

Filled by the search and answering issues; importable now so the dependency contracts hold.
"""

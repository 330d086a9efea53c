"""The one way a test changes MAILFATHOM_* settings: by attribute name, for that test only.

`configure(settings, chat_model="m")` takes pytest-django's `settings` fixture, which restores
the value after the test. Both the change and the restore send Django's setting_changed, so
every provider, ledger and cache built from the old values is forgotten
(mailfathom.core.resettable); no test resets anything by hand. An undeclared name raises TypeError.
"""

from __future__ import annotations

from typing import Any


def configure(settings: Any, **attributes: Any) -> None:
    settings.MAILFATHOM = settings.MAILFATHOM.replace(**attributes)


def scripted_embeddings(server: Any, **more: Any) -> dict[str, Any]:
    """The attributes that point embeddings at a scripted OpenAI-compatible `server`."""
    return {
        "embedding_provider": "openai",
        "embedding_base_url": server.base_url,
        "embedding_model": "text-embed",
        "embedding_api_key": "k",
        "embedding_dimensions": server.dimensions,
        **more,
    }

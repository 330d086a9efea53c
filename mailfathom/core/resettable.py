"""Process-wide singletons and caches, forgotten when the settings they were built from change.

A module that keeps something for the life of a process (the embedder, the chat model, the
period ledger, a cache of counts) registers how to forget it and which Django settings it is
built from. Django sends `setting_changed` whenever a setting is overridden or restored
(`override_settings`, pytest-django's `settings` fixture), and every registered reset for that
setting runs then, so no caller, test or otherwise, resets anything by hand.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from django.core.signals import setting_changed

_lock = threading.Lock()
_resets: dict[str, list[Callable[[], None]]] = {}


def forgotten_when_changed(*setting_names: str) -> Callable[[Callable[[], None]], Callable[[], None]]:
    """Register the decorated function to run whenever one of `setting_names` changes."""

    def register(reset: Callable[[], None]) -> Callable[[], None]:
        with _lock:
            for name in setting_names:
                _resets.setdefault(name, []).append(reset)
        return reset

    return register


def _on_setting_changed(setting: str, **kwargs: Any) -> None:
    with _lock:
        resets = list(_resets.get(setting, ()))
    for reset in resets:
        reset()


setting_changed.connect(_on_setting_changed, dispatch_uid="mailfathom.core.resettable")

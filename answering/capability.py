"""Whether this deployment answers questions now: inactive, available or degraded.

Read in one place, so tools/list and the use case cannot disagree (docs/operations/answering.md,
When ask_mail is offered): inactive without a chat endpoint or mail embeddings; degraded when
the embedding space cannot place a query or the chat endpoint failed within WITHHOLD_SECONDS;
available otherwise. After a chat failure one question is let through as a probe, since
nothing else calls the endpoint and answering would otherwise stay withheld forever. Never
calls a provider.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from django.conf import settings

from mailbox.services import embedding
from mailfathom.core.capability import CapabilityState
from mailfathom.core.resettable import forgotten_when_changed
from mailfathom.providers.chat import CHAT_ROLE
from mailfathom.providers.health import read_health

WITHHOLD_SECONDS = 60.0


@dataclass(frozen=True)
class Capability:
    state: CapabilityState
    reason: str  # a fixed phrase for logs and spans: never content
    probe: bool = False  # available only to find out whether a failed endpoint recovered


def chat_declared() -> bool:
    return settings.MAILFATHOM.chat_provider != "none"


def answering_capability(now: float | None = None) -> Capability:
    """The state of answering right now (see the module docstring)."""
    if not chat_declared():
        return Capability(CapabilityState.INACTIVE, "no chat endpoint declared")
    semantic = embedding.semantic_state()
    if semantic == CapabilityState.INACTIVE:
        return Capability(CapabilityState.INACTIVE, "no mail embedded")
    if semantic == CapabilityState.DEGRADED:
        return Capability(CapabilityState.DEGRADED, "embedding space cannot place a query")
    chat = read_health(CHAT_ROLE, configured=True)
    if chat.consecutive_failures == 0 or chat.last_failure_at is None:
        return Capability(CapabilityState.AVAILABLE, "ready")
    now = time.time() if now is None else now
    if now - chat.last_failure_at < WITHHOLD_SECONDS:
        return Capability(CapabilityState.DEGRADED, f"chat endpoint failed ({chat.last_failure_kind})")
    return Capability(
        CapabilityState.AVAILABLE, "chat endpoint failed a minute ago: one question may probe it", probe=True
    )


_probe_lock = threading.Lock()
_probe_in_flight = False


@forgotten_when_changed("MAILFATHOM")
def _forget_probe() -> None:
    """A new configuration is a new endpoint: no question is probing it yet."""
    global _probe_in_flight
    with _probe_lock:
        _probe_in_flight = False


@contextmanager
def admit_question(now: float | None = None) -> Iterator[Capability]:
    """The capability a question runs under; at most one probe question at a time per process."""
    global _probe_in_flight
    capability = answering_capability(now)
    if not capability.probe:
        yield capability
        return
    with _probe_lock:
        if _probe_in_flight:
            taken = False
        else:
            _probe_in_flight = taken = True
    if not taken:
        yield Capability(CapabilityState.DEGRADED, "another question is probing the chat endpoint")
        return
    try:
        yield capability
    finally:
        with _probe_lock:
            _probe_in_flight = False


def answering_available() -> bool:
    """Whether ask_mail is offered right now."""
    return answering_capability().state == CapabilityState.AVAILABLE

"""Whether this deployment drafts replies now: inactive, available or degraded.

Read in one place, so tools/list, draft_reply and the scheduled runs cannot disagree:
inactive when the utility or drafting role resolves to no provider, degraded when either
failed within WITHHOLD_SECONDS, available otherwise. Embeddings are not needed (gather then
ranks lexically). Never calls a provider.
"""

from __future__ import annotations

import time

from django.conf import settings

from answering.capability import WITHHOLD_SECONDS, Capability
from mailfathom.core.capability import CapabilityState
from mailfathom.core.config import DRAFTING_ROLES
from mailfathom.providers.health import read_health


def drafting_capability(now: float | None = None) -> Capability:
    values = settings.MAILFATHOM
    if not all(values.chat_endpoint(role).configured for role in DRAFTING_ROLES):
        return Capability(CapabilityState.INACTIVE, "no drafting endpoint declared")
    now = time.time() if now is None else now
    for role in DRAFTING_ROLES:
        health = read_health(role, configured=True)
        failed_at = health.last_failure_at
        if health.consecutive_failures and failed_at is not None and now - failed_at < WITHHOLD_SECONDS:
            return Capability(
                CapabilityState.DEGRADED, f"{role} endpoint failed ({health.last_failure_kind})"
            )
    return Capability(CapabilityState.AVAILABLE, "ready")


def drafting_available() -> bool:
    """Whether draft_reply is offered (and scheduled drafting runs) right now."""
    return drafting_capability().state == CapabilityState.AVAILABLE

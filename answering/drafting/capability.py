"""Whether this deployment drafts replies now: inactive, available or degraded.

Read in one place, so the tools/list that advertises draft_reply, the use case behind it
and the scheduled runs cannot disagree:

- inactive: the utility or the drafting endpoint resolves to no provider
  (MAILFATHOM_DRAFTING_*_PROVIDER=none, or no chat endpoint to fall back to);
- degraded: one of the two failed within the last WITHHOLD_SECONDS (a minute later one
  draft may find out whether it was repaired);
- available: otherwise.

Drafting does not need embeddings: without them gather ranks lexically. Costs one read of
local settings and of each role's shared health record; never a provider call.
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

"""The states a capability (semantic search, answering) is in, with their wire spellings.

One definition for every layer: the provider health record, the semantic-search state a
search reports as semanticSearch, answering's capability and the schema the MCP bridge
publishes all use these members, so none can spell a state differently. The values are
published: renaming one changes what callers read (see docs/search.md and
docs/operations/answering.md).
"""

from __future__ import annotations

from enum import StrEnum

from mailfathom.core.errors import CAPABILITY_UNAVAILABLE, MailFathomError


class CapabilityState(StrEnum):
    # Not configured here: nothing is wrong, and nothing changes on its own.
    INACTIVE = "inactive"
    AVAILABLE = "available"
    # Configured, but cannot serve right now (a provider failing, a mismatched profile).
    DEGRADED = "degraded"


# Semantic search only (search's semanticSearch, never answering's capability): available,
# but too little of the scope is embedded yet for the vector ranking to speak for all of it.
SEMANTIC_PARTIAL = "partial"


def capability_refused(state: CapabilityState, does: str, lacking: str) -> MailFathomError:
    """56001 for a capability that is not available now.

    Degraded: the code's own sentence, "This deployment {does} but cannot right now". Inactive:
    `lacking`, the sentence saying what this deployment does not declare.
    """
    if state == CapabilityState.DEGRADED:
        return MailFathomError(CAPABILITY_UNAVAILABLE, CAPABILITY_UNAVAILABLE.message(does=does))
    return MailFathomError(CAPABILITY_UNAVAILABLE, lacking)

"""Provider failures: one exception type that carries its retry decision and its spec code.

Every backend translates its client's exceptions into a ProviderError, so resilience, health
and callers reason about a few kinds rather than an SDK's tree. `provider_code` maps a kind to
71001 (credential refused), 72001 (no usable answer in time) or 73001 (an unusable answer);
all lie outside the caller category, so a boundary publishes them as 54001 (docs/errors.md).
Messages are fixed sentences, never the provider's text, which may quote mail back.
"""

from __future__ import annotations

import functools

from mailfathom.core.errors import Code, MailFathomError

CREDENTIAL_REFUSED = "credential_refused"
TIMEOUT = "timeout"
RATE_LIMITED = "rate_limited"
UNAVAILABLE = "unavailable"
BAD_RESPONSE = "bad_response"
MODEL_MISMATCH = "model_mismatch"
CIRCUIT_OPEN = "circuit_open"
OVERLOADED = "overloaded"

KINDS = (
    CREDENTIAL_REFUSED,
    TIMEOUT,
    RATE_LIMITED,
    UNAVAILABLE,
    BAD_RESPONSE,
    MODEL_MISMATCH,
    CIRCUIT_OPEN,
    OVERLOADED,
)

# Kinds raised by MailFathom itself before a call reaches the provider: they say nothing
# about the provider, so neither the circuit nor the health record counts them.
LOCAL_REFUSALS = frozenset({CIRCUIT_OPEN, OVERLOADED})

PROVIDER_CREDENTIAL_REFUSED = Code.PROVIDER_CREDENTIAL_REFUSED
PROVIDER_NO_ANSWER_IN_BUDGET = Code.PROVIDER_NO_ANSWER_IN_BUDGET
PROVIDER_NO_USABLE_ANSWER = Code.PROVIDER_NO_USABLE_ANSWER

_CODES = {
    CREDENTIAL_REFUSED: PROVIDER_CREDENTIAL_REFUSED,
    TIMEOUT: PROVIDER_NO_ANSWER_IN_BUDGET,
    RATE_LIMITED: PROVIDER_NO_ANSWER_IN_BUDGET,
    UNAVAILABLE: PROVIDER_NO_ANSWER_IN_BUDGET,
    CIRCUIT_OPEN: PROVIDER_NO_ANSWER_IN_BUDGET,
    OVERLOADED: PROVIDER_NO_ANSWER_IN_BUDGET,
    BAD_RESPONSE: PROVIDER_NO_USABLE_ANSWER,
    MODEL_MISMATCH: PROVIDER_NO_USABLE_ANSWER,
}

_SENTENCES = {
    CREDENTIAL_REFUSED: "The {role} provider refused the configured credential.",
    TIMEOUT: "The {role} provider did not answer within the call's deadline.",
    RATE_LIMITED: "The {role} provider is throttling calls.",
    UNAVAILABLE: "The {role} provider could not be reached or failed to answer.",
    BAD_RESPONSE: "The {role} provider answered with something that could not be used.",
    MODEL_MISMATCH: "The {role} provider does not serve the configured model or its dimensions.",
    CIRCUIT_OPEN: "Calls to the {role} provider are paused after repeated failures.",
    OVERLOADED: "Too many calls to the {role} provider are already in flight.",
}


class ProviderError(MailFathomError):
    """A provider call that failed, with its kind and whether repeating it may succeed.

    `retry_after` is the provider's own hint in seconds (a 429's Retry-After), if it gave
    one; `status` is the HTTP status where there was one. Neither carries content.
    """

    def __init__(
        self,
        kind: str,
        transient: bool,
        *,
        role: str = "embedding",
        retry_after: float | None = None,
        status: int | None = None,
    ) -> None:
        if kind not in _CODES:
            raise ValueError("unknown provider error kind")
        super().__init__(_CODES[kind], _SENTENCES[kind].format(role=role))
        self.kind = kind
        self.transient = transient
        self.role = role
        self.retry_after = retry_after
        self.status = status

    def __reduce__(self) -> tuple[object, ...]:
        rebuild = functools.partial(
            ProviderError, role=self.role, retry_after=self.retry_after, status=self.status
        )
        return (rebuild, (self.kind, self.transient))

    def __repr__(self) -> str:
        return f"ProviderError(kind={self.kind!r}, transient={self.transient}, status={self.status})"


def provider_code(error: ProviderError) -> int:
    """Return the spec's provider code (71001, 72001 or 73001) for `error`."""
    return _CODES[error.kind]

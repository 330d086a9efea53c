"""Provider failures: one exception type that carries its retry decision and its spec code.

Every backend translates what its client raised into a ProviderError before it leaves the
backend, so the resilience wrapper, the health record and the callers reason about eight
kinds rather than about one SDK's exception tree. `provider_code` is the one place a kind
becomes one of the provider codes callers see (docs/errors.md):

- 71001 the provider refused the configured credential;
- 72001 the provider gave no usable answer within the call's budget (it timed out,
  throttled, failed, was unreachable, or MailFathom's own circuit or concurrency limit
  refused to send the call);
- 73001 the provider answered, but with nothing usable (a malformed reply, a vector of the
  wrong size, a model it does not serve).

All three lie outside the caller category of mailfathom.core.errors, so a boundary publishes
each as 54001 and only the server log and the health record say which it was.

Messages are fixed sentences per kind and role: they never carry the provider's own error
text, which may quote the input (mail) back.
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

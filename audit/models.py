"""The audit app's models: the API token lives in audit.tokens and is registered here."""

from audit.tokens import ApiToken  # noqa: F401

"""The audit app's admin: the compliance API tokens register themselves in audit.admin_tokens."""

import audit.admin_tokens  # noqa: F401

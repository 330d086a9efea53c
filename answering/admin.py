"""Admin of the answering app (each part in its own module, registered on import)."""

from answering import admin_references  # noqa: F401

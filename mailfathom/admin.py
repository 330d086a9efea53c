"""Admin registrations of the project layer: the mail account admin with synchronization status."""

from mailfathom.status import account_admin  # noqa: F401  (registers SyncedMailAccountAdmin)

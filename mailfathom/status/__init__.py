"""The operator's view of what the system is doing: the status page, /health, account status.

It composes use cases of every app (mailbox's synchronization and coverage status,
answering's period use) with the Celery heartbeats, so it stands above the apps, beside the
other entrypoints; no app imports it (an import-linter contract).
"""

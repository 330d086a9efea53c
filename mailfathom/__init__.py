"""MailFathom: a safe, searchable local copy of IMAP mailboxes for people and AI clients.

Imports nothing: `from mailfathom.core.errors import ...` in any app must not load Celery.
The Celery application is loaded by MailFathomConfig.ready (every Django process) and by
`celery -A mailfathom`, which finds mailfathom.celery on its own.
"""

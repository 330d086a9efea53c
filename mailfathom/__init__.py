"""MailFathom: a safe, searchable local copy of IMAP mailboxes for people and AI clients."""

from mailfathom.celery import app as celery_app

__all__ = ["celery_app"]

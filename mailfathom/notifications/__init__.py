"""Notifications a person chooses: counts and links about their mail accounts, never mail content.

On the roof because it reads three apps (answering's drafts, mailbox's synchronization,
accounts' sign-ins and people). Preferences and what was sent are accounts' models.
"""

"""Signals mailbox sends, so an app above it can follow without mailbox importing it."""

from django.dispatch import Signal

# Sent when a synchronization run of an account ends (engine.synchronize_account) and after
# each push-mode synchronization of one folder (sync.idle), with `account_pk` and `stored`
# (how many new emails the run stored). Receivers must not raise: they run in the sync
# worker; answering uses it to queue a drafting run.
synchronization_finished = Signal()

# Sent when an admin page showed mail content (subject, sender, body) to a user holding
# "view mail content", with `user`, `page` ("email_change" for one email's page, "email_list"
# for a list page showing subjects and senders) and `email_ids` (the emails shown, by id, in
# the order shown). Receivers must not raise: the page is already rendered; the audit app
# records it in the access trail (docs/operations/compliance.md).
mail_content_shown = Signal()

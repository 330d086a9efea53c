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

# Sent when synchronization deletes a folder's stored mail because the server gave the folder
# a new UIDVALIDITY (every UID held is void), inside the deleting transaction and before the
# rows go, with `account_pk`, `folder_alias` and `emails` (how many are deleted). The audit app
# records it in the mutation trail (folder_mail_deleted); a receiver that raises aborts the
# deletion, which the next run tries again.
folder_mail_deleted = Signal()

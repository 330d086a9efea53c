"""Signals mailbox sends, so an app above it can follow without mailbox importing it."""

from django.dispatch import Signal

# Sent when a synchronization run of an account ends (engine.synchronize_account) and after
# each push-mode synchronization of one folder (sync.idle), with `account_pk` and `stored`
# (how many new emails the run stored). Receivers must not raise: they run in the sync
# worker; answering uses it to queue a drafting run.
synchronization_finished = Signal()

"""Signals accounts sends, so an app above it can follow without accounts importing it."""

from django.dispatch import Signal

# Sent by MailAccount.save when a saved account's drafting_enabled goes from off to on, with
# `account_pk`, inside the saving transaction. Answering queues the first drafting run
# after the commit (answering.receivers), rather than waiting for the beat schedule.
drafting_switched_on = Signal()

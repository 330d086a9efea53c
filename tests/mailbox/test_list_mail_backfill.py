"""Migration 0013 marks the list mail stored before Email.is_list_mail existed, from its stored headers."""

from __future__ import annotations

import importlib

import pytest
from django.apps import apps

from mailbox.models import Email
from tests.mailbox.factories import EmailFactory

pytestmark = pytest.mark.django_db

backfill = importlib.import_module("mailbox.migrations.0013_email_is_list_mail")


def _raw(*headers: str) -> bytes:
    return (
        "\r\n".join(["From: jo@example.org", "Subject: s", *headers]) + "\r\n\r\nList-Id: <in.the.body>\r\n"
    ).encode()


def test_the_backfill_reads_list_id_and_precedence_of_bulk_rows_only():
    listed = EmailFactory(is_bulk=True, raw=_raw("List-Id: Users <users.lists.example>"))
    precedence = EmailFactory(is_bulk=True, raw=_raw("Precedence: list"))
    automatic = EmailFactory(is_bulk=True, raw=_raw("Auto-Submitted: auto-generated"))
    body_only = EmailFactory(is_bulk=True, raw=_raw())  # "List-Id" written in the body only
    personal = EmailFactory(is_bulk=False, raw=_raw("List-Id: <never.read>"))  # not bulk: not read
    Email.objects.update(is_list_mail=False)

    backfill.mark_list_mail(apps, None)

    marked = set(Email.objects.filter(is_list_mail=True).values_list("pk", flat=True))
    assert marked == {listed.pk, precedence.pk}
    assert not {automatic.pk, body_only.pk, personal.pk} & marked

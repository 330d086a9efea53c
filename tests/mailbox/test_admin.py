"""The local copy in the operator's console: synchronization state and metadata, never mail content."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.contrib.admin.helpers import ACTION_CHECKBOX_NAME
from django.contrib.auth.models import Permission, User
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from mailbox import tasks
from mailbox.models import Folder
from mailbox.services.store import IncomingMessage, store_messages
from tests.factories import MailAccountFactory
from tests.mailbox.factories import synced_folder

pytestmark = pytest.mark.django_db

SUBJECT = "Confidential merger plan for Zanzibar"
SENDER = "chief.secret@example.org"
BODY = "Nobody at the console should read this sentence"


def _message(n: int) -> bytes:
    return (
        f"From: Chief <{SENDER}>\r\nTo: board@example.org\r\nSubject: {SUBJECT} {n}\r\n"
        f"Message-ID: <admin-{n}@example.org>\r\nDate: Mon, 2 Nov 2026 10:00:00 +0000\r\n\r\n"
        f"{BODY} ({n}).\r\n"
    ).encode()


def _store(folder: Folder, count: int, start: int = 0) -> None:
    messages = [_message(n) for n in range(start, start + count)]
    incoming = [
        IncomingMessage(uidvalidity=1, uid=start + n + 1, size=len(raw), received_at=None, raw=raw)
        for n, raw in enumerate(messages)
    ]
    assert store_messages(folder, incoming).stored == count


def _cell(page: str, field: str, row: int) -> str:
    """Return the text of the `field` column in changelist row `row` (0-based)."""
    cells = re.findall(rf'<t[dh] class="field-{field}[^"]*">(.*?)</t[dh]>', page, re.S)
    return re.sub(r"<[^>]+>", "", cells[row]).strip()


def _changelist(client, model: str, account=None, **params) -> str:
    """Render a changelist, narrowed to `account` when given.

    Narrowing keeps a test to its own rows even when another test session has committed
    rows to the same database.
    """
    if account is not None:
        params["account__id__exact"] = account.pk
    response = client.get(reverse(f"admin:mailbox_{model}_changelist"), params)
    assert response.status_code == 200
    return response.content.decode()


# --- folders ------------------------------------------------------------------------


def test_folder_list_shows_never_for_an_unsynchronized_folder_and_the_message_count(admin_client):
    account = MailAccountFactory(account_id="acme")
    fresh = synced_folder(account, "archive")
    busy = synced_folder(account, "inbox")
    _store(busy, 3)
    Folder.objects.filter(pk=busy.pk).update(
        last_committed_at=timezone.now(),
        last_failure_code=62001,
        last_failure_at=timezone.now(),
        consecutive_failures=2,
        lease_token="0190a0a0-0000-7000-8000-000000000000",
        lease_expires_at=timezone.now() + timedelta(minutes=5),
    )

    page = _changelist(admin_client, "folder", account)

    # Rows are ordered by account then remote name: ARCHIVE, then INBOX.
    assert [_cell(page, "alias", 0), _cell(page, "alias", 1)] == ["archive", "inbox"]
    assert _cell(page, "last_committed", 0) == "never"
    assert _cell(page, "last_committed", 1) != "never"
    assert _cell(page, "message_count", 0) == "0"
    assert _cell(page, "message_count", 1) == "3"
    assert _cell(page, "last_failure", 0) == "-"
    assert _cell(page, "last_failure", 1).startswith("62001 at ")
    assert _cell(page, "consecutive_failures", 1) == "2"
    # The lease in words: a free folder is no error, so no red ✗ icon.
    assert [_cell(page, "lease_held", 0), _cell(page, "lease_held", 1)] == ["free", "in use by a run"]
    assert not any("<img" in cell for cell in re.findall(r'class="field-lease_held">(.*?)</td>', page))
    assert fresh.pk != busy.pk


def test_folder_whose_mapping_was_removed_shows_unmapped(admin_client):
    folder = synced_folder(alias="old")
    folder.mapping.delete()

    page = _changelist(admin_client, "folder", folder.account)

    assert _cell(page, "alias", 0) == "(unmapped)"


def test_folder_list_costs_the_same_queries_for_one_folder_or_many(admin_client):
    account = MailAccountFactory()
    _store(synced_folder(account, "one"), 2)
    with CaptureQueriesContext(connection) as one:
        _changelist(admin_client, "folder", account)
    for n in range(4):
        _store(synced_folder(account, f"more-{n}"), 2, start=10 * (n + 1))
    with CaptureQueriesContext(connection) as many:
        page = _changelist(admin_client, "folder", account)

    assert page.count('class="field-message_count"') == 5
    # Rows add no query each (account, mapping and count come with the rows).
    assert len(many.captured_queries) == len(one.captured_queries)


def test_folder_list_filters_by_account(admin_client):
    first = synced_folder(alias="inbox")
    second = synced_folder(alias="inbox")

    page = _changelist(admin_client, "folder", second.account)

    assert page.count('class="field-alias"') == 1
    assert str(second.account) in page
    assert first.account_id != second.account_id


def test_synchronize_now_queues_one_forced_run_per_account_after_commit(
    admin_client, monkeypatch, django_capture_on_commit_callbacks
):
    # The task's delay() is our seam to the broker: recording it here tests what the action
    # asks for without a Redis round trip; the worker's side is tested in test_sync_worker.
    queued: list[tuple[tuple, dict]] = []
    monkeypatch.setattr(tasks.sync_account, "delay", lambda *a, **kw: queued.append((a, kw)))
    first_account = MailAccountFactory()
    second_account = MailAccountFactory()
    selected = [
        synced_folder(first_account, "inbox"),
        synced_folder(first_account, "sent"),
        synced_folder(first_account, "junk"),
        synced_folder(second_account, "inbox"),
    ]
    synced_folder(alias="unselected")  # a third account, not selected: nothing is queued for it

    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        response = admin_client.post(
            reverse("admin:mailbox_folder_changelist"),
            {"action": "synchronize_now", ACTION_CHECKBOX_NAME: [f.pk for f in selected]},
            follow=True,
        )
        assert queued == []  # nothing reaches the broker before the transaction commits

    assert response.status_code == 200
    assert len(callbacks) == 2
    assert sorted(queued) == sorted(
        [((first_account.pk,), {"force": True}), ((second_account.pk,), {"force": True})]
    )
    assert "Queued 2 synchronization runs." in response.content.decode()


def test_synchronize_now_is_not_offered_without_permission_to_change_accounts(client, monkeypatch):
    queued: list = []
    monkeypatch.setattr(tasks.sync_account, "delay", lambda *a, **kw: queued.append(a))
    viewer = User.objects.create_user("viewer", password="pw", is_staff=True)
    viewer.user_permissions.add(Permission.objects.get(codename="view_folder"))
    client.force_login(viewer)
    folder = synced_folder(alias="inbox")

    page = _changelist(client, "folder", folder.account)
    response = client.post(
        reverse("admin:mailbox_folder_changelist"),
        {"action": "synchronize_now", ACTION_CHECKBOX_NAME: [folder.pk]},
    )

    assert "synchronize_now" not in page
    assert response.status_code in (200, 302)
    assert queued == []


def test_folder_pages_add_change_and_delete_nothing(admin_client):
    folder = synced_folder(alias="inbox")
    change = reverse("admin:mailbox_folder_change", args=[folder.pk])

    assert admin_client.get(reverse("admin:mailbox_folder_add")).status_code == 403
    assert admin_client.get(change).status_code == 200  # viewable, read-only
    assert admin_client.post(change, {"remote_name": "Elsewhere"}).status_code == 403
    assert admin_client.get(reverse("admin:mailbox_folder_delete", args=[folder.pk])).status_code == 403
    folder.refresh_from_db()
    assert folder.remote_name == "INBOX"

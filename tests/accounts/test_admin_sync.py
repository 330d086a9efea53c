"""The account list and page say what synchronization is doing, and start a run themselves.

"Synchronize now" is on the account (a button on its page, an action on the list), so it
works before the first run, when the account has no folder rows yet.
"""

from __future__ import annotations

import html
import re
from datetime import timedelta

import pytest
from django.contrib.admin.helpers import ACTION_CHECKBOX_NAME
from django.contrib.auth.models import Permission, User
from django.urls import reverse
from django.utils import timezone

from accounts.forms import ByteSizeField, in_units
from accounts.models import MailAccount
from mailbox import tasks
from mailbox.models import Folder
from mailbox.services.store import IncomingMessage, store_messages
from tests.factories import FolderMappingFactory, MailAccountFactory, account_form_data
from tests.mailbox.factories import synced_folder

pytestmark = pytest.mark.django_db


@pytest.fixture
def queued(monkeypatch) -> list[tuple[tuple, dict]]:
    """What reaches the broker: delay() is our seam to it (the worker's side: test_sync_worker)."""
    calls: list[tuple[tuple, dict]] = []
    monkeypatch.setattr(tasks.sync_account, "delay", lambda *a, **kw: calls.append((a, kw)))
    return calls


def _synchronized(account: MailAccount, alias: str, stored: int, server: int, **state) -> Folder:
    folder = synced_folder(account, alias)
    raw = b"From: a@example.org\r\nSubject: s\r\n\r\nbody\r\n"
    store_messages(
        folder,
        [
            IncomingMessage(uidvalidity=1, uid=n + 1, size=len(raw), received_at=None, raw=raw)
            for n in range(stored)
        ],
        advance_to_uid=stored or None,
    )
    Folder.objects.filter(pk=folder.pk).update(server_message_count=server, **state)
    return folder


def _cell(page: str, field: str, row: int = 0) -> str:
    cells = re.findall(rf'<td class="field-{field}[^"]*">(.*?)</td>', page, re.S)
    return cells[row]


def _text(html: str) -> str:
    return re.sub(r"<[^>]+>", "", html).strip()


# --- the list ---------------------------------------------------------------------------


def test_account_list_shows_state_last_sync_counts_and_last_error(admin_client):
    account = MailAccountFactory(account_id="acme")
    _synchronized(
        account, "inbox", stored=4, server=6, last_committed_at=timezone.now() - timedelta(seconds=12)
    )
    _synchronized(
        account,
        "sent",
        stored=1,
        server=1,
        last_failure_code=61002,
        last_committed_at=timezone.now() - timedelta(minutes=5),
        backoff_until=timezone.now() + timedelta(minutes=2),
    )

    page = admin_client.get(reverse("admin:accounts_mailaccount_changelist"), {"q": "acme"}).content.decode()

    assert 'data-state="backing-off"' in _cell(page, "sync_state")
    assert re.fullmatch(r"1[2-9] s ago", _text(_cell(page, "last_sync")))
    assert 'title="' in _cell(page, "last_sync")  # the instant to the second, on hover
    assert _text(_cell(page, "messages")) == "5 / 7"
    assert 'data-stored="5" data-server="7"' in _cell(page, "messages")
    assert _text(_cell(page, "last_error")) == "61002: The server refused the login."


def test_account_list_shows_never_for_an_account_not_yet_synchronized(admin_client):
    MailAccountFactory(account_id="fresh")

    page = admin_client.get(reverse("admin:accounts_mailaccount_changelist"), {"q": "fresh"}).content.decode()

    assert _text(_cell(page, "last_sync")) == "never"
    assert 'data-state="never"' in _cell(page, "sync_state")
    assert _text(_cell(page, "messages")) == "0 / –"


def test_account_list_action_queues_a_forced_run_per_account_after_commit(
    admin_client, queued, django_capture_on_commit_callbacks
):
    first, second = MailAccountFactory(), MailAccountFactory()
    for account in (first, second):
        FolderMappingFactory(account=account, alias="inbox")  # mapped, never synchronized

    with django_capture_on_commit_callbacks(execute=True):
        response = admin_client.post(
            reverse("admin:accounts_mailaccount_changelist"),
            {"action": "synchronize_now", ACTION_CHECKBOX_NAME: [first.pk, second.pk]},
            follow=True,
        )
        assert queued == []  # nothing reaches the broker before the transaction commits

    assert sorted(queued) == sorted([((first.pk,), {"force": True}), ((second.pk,), {"force": True})])
    assert "Queued 2 synchronization runs" in response.content.decode()


# --- the account's page ---------------------------------------------------------------


def test_account_page_has_a_synchronize_now_button_and_the_status(admin_client):
    account = MailAccountFactory()
    folder = _synchronized(account, "inbox", stored=2, server=3, last_committed_at=timezone.now())

    page = admin_client.get(reverse("admin:accounts_mailaccount_change", args=[account.pk])).content.decode()

    assert 'id="sync-now"' in page
    action = reverse("admin:accounts_mailaccount_synchronize", args=[account.pk])
    assert f'action="{action}"' in page
    assert re.search(r'id="account-sync-status" data-state="idle" data-stored="2" data-server="3"', page)
    assert f'id="account-folder-{folder.pk}" data-folder="inbox" data-state="idle"' in page


def test_synchronize_now_before_the_first_run_queues_an_account_run(
    admin_client, queued, django_capture_on_commit_callbacks
):
    account = MailAccountFactory()
    FolderMappingFactory(account=account, alias="inbox")
    assert not Folder.objects.filter(account=account).exists()

    with django_capture_on_commit_callbacks(execute=True):
        response = admin_client.post(
            reverse("admin:accounts_mailaccount_synchronize", args=[account.pk]), follow=True
        )

    assert queued == [((account.pk,), {"force": True})]
    assert response.redirect_chain[-1][0] == reverse("admin:accounts_mailaccount_change", args=[account.pk])
    assert "Queued 1 synchronization run" in response.content.decode()


def test_synchronize_now_without_a_mapping_says_what_to_do_and_queues_nothing(admin_client, queued):
    account = MailAccountFactory()

    response = admin_client.post(
        reverse("admin:accounts_mailaccount_synchronize", args=[account.pk]), follow=True
    )

    assert queued == []
    assert "has no mapped folder yet" in response.content.decode()


def test_synchronize_now_for_a_disabled_account_queues_nothing(admin_client, queued):
    account = MailAccountFactory(sync_enabled=False)
    FolderMappingFactory(account=account, alias="inbox")

    response = admin_client.post(
        reverse("admin:accounts_mailaccount_synchronize", args=[account.pk]), follow=True
    )

    assert queued == []
    assert "synchronization is off" in response.content.decode()


def test_synchronize_now_is_post_only_and_needs_change_permission(client, queued):
    account = MailAccountFactory()
    FolderMappingFactory(account=account, alias="inbox")
    url = reverse("admin:accounts_mailaccount_synchronize", args=[account.pk])
    viewer = User.objects.create_user("viewer", password="pw", is_staff=True)
    # An operator who may only look: every account is in sight, none may be changed.
    viewer.user_permissions.add(
        *Permission.objects.filter(codename__in=["view_mailaccount", "see_every_account"])
    )
    client.force_login(viewer)

    page = client.get(reverse("admin:accounts_mailaccount_change", args=[account.pk])).content.decode()

    assert 'id="sync-now"' not in page
    assert client.post(url).status_code == 403
    assert client.get(url).status_code == 405
    assert queued == []


# --- sizes in units, the breadcrumb, push mode --------------------------------------------


def test_sizes_are_shown_and_typed_in_megabytes_and_gigabytes(admin_client):
    add = admin_client.get(reverse("admin:accounts_mailaccount_add")).content.decode()
    assert re.search(r'name="max_message_bytes_0" value="50"', add)
    assert re.search(r'<option value="MB" selected>MB</option>', add)
    assert re.search(r'name="storage_ceiling_bytes_0" value="20"', add)

    form = account_form_data(
        max_message_bytes_0="2.5", storage_ceiling_bytes_0="3", storage_ceiling_bytes_1="GB"
    )
    response = admin_client.post(reverse("admin:accounts_mailaccount_add"), form)

    assert response.status_code == 302, response.content.decode()[:3000]
    account = MailAccount.objects.get(account_id="billing")
    assert account.max_message_bytes == int(2.5 * 1024**2)
    assert account.storage_ceiling_bytes == 3 * 1024**3
    change = admin_client.get(
        reverse("admin:accounts_mailaccount_change", args=[account.pk])
    ).content.decode()
    assert 'name="max_message_bytes_0" value="2.5"' in change
    assert 'name="storage_ceiling_bytes_0" value="3"' in change


def test_a_size_under_the_minimum_is_refused_in_the_units_typed(admin_client):
    form = account_form_data(storage_ceiling_bytes_0="512", storage_ceiling_bytes_1="KB")

    response = admin_client.post(reverse("admin:accounts_mailaccount_add"), form)

    assert response.status_code == 200
    assert "Enter at least 1 MB." in response.content.decode()
    assert not MailAccount.objects.filter(account_id="billing").exists()


def test_breadcrumb_does_not_repeat_mail_accounts(admin_client):
    page = admin_client.get(reverse("admin:accounts_mailaccount_changelist")).content.decode()
    crumbs = html.unescape(_text(re.search(r'<div class="breadcrumbs">(.*?)</div>', page, re.S).group(1)))

    assert "Mail accounts › Mail accounts" not in crumbs.replace("\n", " ")
    assert re.sub(r"\s+", " ", crumbs) == "Home › Accounts and access › Mail accounts"


def test_switching_to_push_mode_says_when_it_takes_effect(admin_client):
    admin_client.post(reverse("admin:accounts_mailaccount_add"), account_form_data())
    account = MailAccount.objects.get(account_id="billing")
    form = account_form_data(
        sync_mode="push",
        credential="",
        imap_host=account.imap_host,
        **{"folders-TOTAL_FORMS": "0"},
    )
    form.pop("account_id")

    response = admin_client.post(
        reverse("admin:accounts_mailaccount_change", args=[account.pk]), form, follow=True
    )

    assert response.status_code == 200
    assert "Push mode takes effect within a minute" in response.content.decode()
    account.refresh_from_db()
    assert account.sync_mode == "push"


@pytest.mark.parametrize("size", [1024, 50 * 1024**2, int(2.5 * 1024**2), 3 * 1024**3, 1_234_567, 1025])
def test_a_size_written_in_units_reads_back_to_the_same_bytes(size):
    number, unit = in_units(size)

    assert ByteSizeField(minimum=1024).compress([number, unit]) == size

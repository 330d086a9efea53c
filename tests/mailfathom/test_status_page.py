"""The System status page: what synchronization, embedding, answering and the workers are doing.

The rows are built as synchronization leaves them (store_messages, the folder's lease and
failure columns), the heartbeats and the answering ledger in the real Redis under a
namespace of the test's own.
"""

from __future__ import annotations

import re
import time
from datetime import timedelta

import pytest
from django.contrib.auth.models import Permission, User
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from answering.ledger import period_ledger
from mailbox.models import CoverageSample, Email, Folder
from mailbox.services import coverage_status
from mailbox.services.store import IncomingMessage, store_messages
from mailbox.services.sync_status import account_statuses
from mailfathom.core import heartbeat
from tests.factories import FolderMappingFactory, MailAccountFactory
from tests.mailbox.factories import synced_folder
from tests.mailfathom.status_page import data_attributes, status_page

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("own_provider_health")]


def _message(n: int) -> bytes:
    return (
        f"From: A <a{n}@example.org>\r\nTo: b@example.org\r\nSubject: status {n}\r\n"
        f"Message-ID: <status-{n}@example.org>\r\nDate: Mon, 2 Nov 2026 10:00:00 +0000\r\n\r\nbody {n}\r\n"
    ).encode()


def _store(folder: Folder, count: int, start: int = 0) -> None:
    incoming = [
        IncomingMessage(uidvalidity=1, uid=start + n + 1, size=100, received_at=None, raw=_message(start + n))
        for n in range(count)
    ]
    store_messages(folder, incoming, advance_to_uid=start + count)


def test_admin_index_leads_to_the_status_page(admin_client):
    index = admin_client.get(reverse("admin:index")).content.decode()

    assert 'id="system-status-link"' in index
    assert reverse("system-status") in index


def test_each_folder_shows_its_state_and_stored_against_the_server(admin_client):
    now = timezone.now()
    account = MailAccountFactory(account_id="acme")
    idle, failing, backing, busy = (synced_folder(account, a) for a in ("archive", "inbox", "junk", "sent"))
    _store(idle, 3)
    Folder.objects.filter(pk=idle.pk).update(server_message_count=3)
    Folder.objects.filter(pk=failing.pk).update(
        last_failure_code=61002,
        last_failure_at=now,
        consecutive_failures=1,
        backoff_until=now - timedelta(seconds=1),
    )
    Folder.objects.filter(pk=backing.pk).update(
        last_failure_code=61001, consecutive_failures=2, backoff_until=now + timedelta(minutes=3)
    )
    _store(busy, 30)
    Folder.objects.filter(pk=busy.pk).update(
        lease_token="0190a0a0-0000-7000-8000-000000000000",
        lease_expires_at=now + timedelta(minutes=5),
        server_message_count=100,
        run_started_at=now - timedelta(seconds=60),
        run_stored=30,
    )

    page = status_page(admin_client)

    assert data_attributes(page, f"status-folder-{idle.pk}") == {
        "account": "acme",
        "folder": "archive",
        "state": "idle",
        "stored": "3",
        "server": "3",
    }
    assert data_attributes(page, f"status-folder-{failing.pk}")["state"] == "failing"
    assert "61002: The server refused the login." in page
    assert data_attributes(page, f"status-folder-{backing.pk}")["state"] == "backing-off"
    assert "backing off until" in page and "61001: The server could not be reached." in page
    assert data_attributes(page, f"status-folder-{busy.pk}") == {
        "account": "acme",
        "folder": "sent",
        "state": "synchronizing",
        "stored": "30",
        "server": "100",
    }
    assert '<progress max="100" value="30"></progress> 30 %' in page
    assert re.search(r"30 %, \d+/min, about \d+ min( \d+ s)? left", page)
    # 30 stored in the 60 s the run has taken at `now`: 30 a minute, 70 to go in 140 s.
    (status,) = account_statuses([account.pk], now=now)
    backfill = next(f for f in status.folders if f.folder_pk == busy.pk).backfill
    assert (backfill.per_minute, backfill.remaining_seconds) == (pytest.approx(30), pytest.approx(140))
    assert data_attributes(page, "status-account-acme") == {
        "account": "acme",
        "state": "synchronizing",
        "stored": "33",
        "server": "",  # two folders were never opened, so the server's total is unknown
    }


def test_an_account_never_synchronized_is_listed_with_its_state(admin_client):
    unmapped = MailAccountFactory(account_id="fresh")
    mapped = MailAccountFactory(account_id="mapped")
    FolderMappingFactory(account=mapped, alias="inbox")

    page = status_page(admin_client)

    assert data_attributes(page, "status-account-fresh")["state"] == "never"
    assert "No folder mapped yet" in page
    assert data_attributes(page, "status-account-mapped") == {
        "account": "mapped",
        "state": "never",
        "stored": "0",
        "server": "",
    }
    assert unmapped.pk != mapped.pk


def test_workers_and_beat_show_when_they_were_last_seen(admin_client):
    heartbeat.record(heartbeat.worker_role("celery"), "celery@box")
    heartbeat.record(heartbeat.BEAT, "box", at=time.time() - 600)

    page = status_page(admin_client)

    assert data_attributes(page, "process-worker-celery") == {"alive": "true"}
    assert data_attributes(page, "process-beat") == {"alive": "false"}
    assert "not seen for 10 min" in page
    assert data_attributes(page, "process-worker-push") == {"alive": "false"}
    assert "never seen" in page


def test_embedding_backlog_shows_coverage_rate_and_when_it_completes(admin_client):
    folder = synced_folder(MailAccountFactory(), "inbox")
    _store(folder, 40)
    Email.objects.filter(pk__in=Email.objects.filter(folder=folder).values("pk")[:10]).update(embedded=True)
    # Ten minutes ago none was embedded; now ten are: one a minute, thirty to go.
    sample = CoverageSample.objects.create(
        taken_at=timezone.now() - timedelta(minutes=10), emails=40, embeddable=40, embedded=0
    )

    page = status_page(admin_client)

    assert data_attributes(page, "status-embedding") == {
        "embedded": "10",
        "embeddable": "40",
        "pending": "30",
        "coverage": "0.25",
    }
    assert "(25 %)" in page
    assert re.search(r"in about \d+ min( \d+ s)? at this rate", page)
    progress = coverage_status.embedding_progress(now=sample.taken_at + timedelta(minutes=10))
    assert progress.per_minute == pytest.approx(1.0)
    assert progress.remaining_seconds == pytest.approx(30 * 60)
    assert 'id="chart-coverage"' in page


def test_answering_period_shows_runs_and_tokens_of_the_ceilings(admin_client, mailfathom_settings):
    mailfathom_settings(answering_max_runs_per_period=20, answering_max_tokens_per_period=10000)
    ledger = period_ledger()
    ledger.admit()
    ledger.charge(2500)

    page = status_page(admin_client)

    assert data_attributes(page, "status-answering") == {"runs": "1", "tokens": "2500"}
    assert "1 of 20 (5.0 %)" in page
    assert "2,500 of 10,000 (25 %)" in page


def test_mail_per_day_chart_is_inline_svg_noting_what_was_stored_today(admin_client):
    _store(synced_folder(MailAccountFactory(), "inbox"), 7)

    page = status_page(admin_client)

    assert data_attributes(page, "chart-stored-per-day")["stored-today"] == "7"
    assert "7 stored today" in page
    assert '<script src="http' not in page and "cdn" not in page.lower()


def test_the_refresh_fragment_is_the_live_part_alone(admin_client):
    account = MailAccountFactory(account_id="acme")
    folder = synced_folder(account, "inbox")
    _store(folder, 2)

    page = status_page(admin_client)
    response = admin_client.get(reverse("system-status-live"))

    fragment = response.content.decode()
    assert response.status_code == 200
    assert "<html" not in fragment and "<html" in page
    assert data_attributes(fragment, f"status-folder-{folder.pk}")["stored"] == "2"
    assert 'data-refresh-url="' + reverse("system-status-live") + '"' in page
    assert "mailfathom/status.js" in page
    assert response["Cache-Control"].startswith("max-age=0")


def test_the_page_costs_the_same_queries_for_one_account_or_many(admin_client):
    _store(synced_folder(MailAccountFactory(), "inbox"), 1)
    status_page(admin_client)
    with CaptureQueriesContext(connection) as one:
        status_page(admin_client)
    for n in range(4):
        account = MailAccountFactory()
        for alias in ("inbox", "sent"):
            _store(synced_folder(account, alias), 1, start=10 * n)
    status_page(admin_client)  # the stored mail makes the past days be counted again, once
    with CaptureQueriesContext(connection) as many:
        status_page(admin_client)

    assert len(many.captured_queries) == len(one.captured_queries)


def test_the_page_needs_staff_and_view_permission_on_accounts(client):
    url = reverse("system-status")
    assert client.get(url).status_code == 302  # to the login form
    staff = User.objects.create_user("staff", password="pw", is_staff=True)
    client.force_login(staff)
    assert client.get(url).status_code == 403
    assert client.get(reverse("system-status-live")).status_code == 403
    staff.user_permissions.add(Permission.objects.get(codename="view_mailaccount"))
    staff = User.objects.get(pk=staff.pk)
    client.force_login(staff)
    assert client.get(url).status_code == 200


def test_coverage_samples_count_what_is_embedded_and_old_ones_are_dropped():
    folder = synced_folder(MailAccountFactory(), "inbox")
    _store(folder, 5)
    Email.objects.filter(pk__in=Email.objects.filter(folder=folder).values("pk")[:2]).update(embedded=True)
    old = CoverageSample.objects.create(
        taken_at=timezone.now() - timedelta(days=40), emails=1, embeddable=1, embedded=1
    )

    sample = coverage_status.record_coverage_sample()

    assert (sample.emails, sample.embeddable, sample.embedded) == (5, 5, 2)
    assert not CoverageSample.objects.filter(pk=old.pk).exists()


def test_a_changed_model_says_reembed_is_needed(admin_client):
    from mailbox.models import EmbeddingProfile
    from mailbox.services.embedding import activate_profile
    from mailfathom.providers import get_embedder

    # No active profile yet: nothing to switch.
    assert "status-embedding-switch" not in status_page(admin_client)
    configured = activate_profile(get_embedder())
    assert "status-embedding-switch" not in status_page(admin_client)  # the configured model is active

    EmbeddingProfile.objects.filter(pk=configured.pk).update(active=False)
    EmbeddingProfile.objects.create(
        provider="local", model="multilingual-e5-small", dimensions=384, active=True
    )
    page = status_page(admin_client)

    assert 'id="status-embedding-switch"' in page
    old = "local:multilingual-e5-small:384"
    assert f"The configured model {configured} is not the active profile {old}" in page
    assert "manage.py reembed" in page

"""The status page and /health give one embedding coverage figure, and the measured rate
leaves the page once nothing waits.

Mail is stored as synchronization stores it (store_messages), samples as beat records
them (CoverageSample rows).
"""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime

import pytest
from django.urls import reverse
from django.utils import timezone

from mailbox.models import CoverageSample, Email, Folder
from mailbox.services.store import IncomingMessage, store_messages
from mailbox.sync.folder_state import ensure_folders
from tests.factories import FolderMappingFactory, MailAccountFactory
from tests.support import isolated_provider_health

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def own_namespace(settings):
    with isolated_provider_health(settings, "status-charts"):
        yield


def _folder() -> Folder:
    mapping = FolderMappingFactory(account=MailAccountFactory(), alias="inbox")
    return next(f for f in ensure_folders(mapping.account) if f.mapping_id == mapping.pk)


def _message(n: int, sent: datetime | None) -> bytes:
    date = f"Date: {format_datetime(sent)}\r\n" if sent else ""
    return (
        f"From: A <a{n}@example.org>\r\nTo: b@example.org\r\nSubject: chart {n}\r\n"
        f"Message-ID: <chart-{n}@example.org>\r\n{date}\r\nbody {n}\r\n"
    ).encode()


def _store(folder: Folder, dated: list[tuple[datetime | None, datetime | None]]) -> None:
    """Store one message per (Date header, INTERNALDATE) pair, all in one batch."""
    incoming = [
        IncomingMessage(uidvalidity=1, uid=n + 1, size=100, received_at=received, raw=_message(n, sent))
        for n, (sent, received) in enumerate(dated)
    ]
    store_messages(folder, incoming, advance_to_uid=len(dated))


def _page(client) -> str:
    response = client.get(reverse("system-status"))
    assert response.status_code == 200
    return response.content.decode()


def _noon(days_ago: int) -> datetime:
    today = timezone.now().astimezone(UTC).date()
    return datetime.combine(today - timedelta(days=days_ago), datetime.min.time(), tzinfo=UTC) + timedelta(
        hours=12
    )


def _health_backlog(client) -> dict:
    return json.loads(client.get("/health").content)["parts"]["embeddingBacklog"]


def _embedding(page: str) -> tuple[dict[str, str], str]:
    """The Embedding section's data-* attributes and its content."""
    found = re.search(r'<dl[^>]*\bid="status-embedding"([^>]*)>(.*?)</dl>', page, re.S)
    assert found, "no Embedding section"
    return dict(re.findall(r'data-([a-z-]+)="([^"]*)"', found.group(1))), found.group(2)


def test_health_and_the_page_give_one_coverage_while_the_latest_sample_lags(admin_client, client):
    folder = _folder()
    _store(folder, [(_noon(1), None), (_noon(2), None), (_noon(3), None)])
    Email.objects.filter(folder=folder).update(embedded=True)
    # Beat's last sample was taken while one email still waited (so /health once said 0.6667).
    CoverageSample.objects.create(
        taken_at=timezone.now() - timedelta(minutes=10), emails=3, embeddable=3, embedded=2
    )

    page = _page(admin_client)
    backlog = _health_backlog(client)

    assert _embedding(page)[0]["coverage"] == "1.0"
    assert "(100 %)" in page
    assert backlog["coverage"] == backlog["sampledCoverage"] == 1.0
    assert backlog["pending"] == 0

    Email.objects.filter(pk=Email.objects.filter(folder=folder).values("pk")[:1]).update(embedded=False)

    assert _embedding(_page(admin_client))[0]["coverage"] == "0.6667"
    assert _health_backlog(client)["coverage"] == 0.6667


def test_measured_rate_leaves_the_page_once_nothing_waits(admin_client):
    folder = _folder()
    _store(folder, [(_noon(1), None), (_noon(2), None)])
    CoverageSample.objects.create(
        taken_at=timezone.now() - timedelta(minutes=10), emails=2, embeddable=2, embedded=0
    )

    _, waiting = _embedding(_page(admin_client))
    Email.objects.filter(folder=folder).update(embedded=True)
    _, done = _embedding(_page(admin_client))

    assert 'id="status-embedding-rate"' in waiting and "Measured rate" in waiting
    assert 'id="status-embedding-rate"' not in done and "Measured rate" not in done
    assert '<dd id="status-embedding-eta">nothing is waiting</dd>' in done

"""An operator's first hour, in Chromium: from the login form to an MCP client reading the mail.

The app (uvicorn), the worker (Celery) and the IMAP server (Dovecot, STARTTLS, signed by the
session's own CA) are all real. Neither process is told about that CA: the operator uploads
it with the account, as one does for a server with an in-house authority, and both the
connection test and the synchronization trust it from there. The synchronization the account
page starts is real too, and the status page, open in a tab of its own, shows it by
refreshing itself. On the way the walk checks each rough edge a newcomer once hit (issue 28):
the port following the security choice, one click to test and map with Junk and Trash hidden
from tools, folder states in words, an email page for people, the status charts, copy
buttons. The mailbox holds only messages this module writes, so the screenshots show no
corpus mail. Each step saves a screenshot under var/screenshots/first_hour/ (a CI artifact);
docs/operations/first-hour.md shows them.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from email.message import EmailMessage
from email.utils import format_datetime, make_msgid
from typing import Any

import pytest
from playwright.sync_api import expect

from accounts.models import Security
from mailbox.models import Folder
from tests.browser import steps
from tests.browser.conftest import Operator, Screenshots
from tests.celery_worker import Worker
from tests.mailbox.imap_support import MailUser, add_user
from tests.mcp.conftest import call_tool, payload
from tests.mcp.servers import TEST_KEYRING, Server, start_server

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.dovecot, pytest.mark.slow]

INBOX_SUBJECTS = [
    "Printer repair quote",
    "Team lunch on Friday",
    "Quarterly report draft",
    "Invoice 1043",
    "Conference travel plans",
    "New starter checklist",
]
SENT_SUBJECTS = ["Re: Printer repair quote", "Re: Team lunch on Friday"]
LATER_SUBJECTS = ["Printer repaired", "Minutes of the planning meeting"]


def sent_on(days_ago: int) -> datetime:
    """A morning `days_ago` days back in UTC: inside the status chart's 30 days whenever the test runs."""
    return datetime.now(UTC).replace(hour=9, minute=30, second=0, microsecond=0) - timedelta(days=days_ago)


INBOX_DAYS_AGO = [20, 19, 18, 17, 16, 15]
SENT_DAYS_AGO = [12, 11]
LATER_DAYS_AGO = [3, 2]


def message(subject: str, sender: str, days_ago: int) -> bytes:
    mail = EmailMessage()
    mail["From"] = sender
    mail["To"] = "operator@example.org"
    mail["Subject"] = subject
    mail["Message-ID"] = make_msgid(domain="example.org")
    mail["Date"] = format_datetime(sent_on(days_ago))
    mail.set_content(f"{subject}.\n\nRegards,\nA colleague\n")
    return mail.as_bytes()


def messages(subjects: list[str], days_ago: list[int], sender: str) -> list[bytes]:
    return [message(subject, sender, days) for subject, days in zip(subjects, days_ago, strict=True)]


@pytest.fixture(scope="module")
def app(django_db_setup, tmp_path_factory) -> Iterator[Server]:
    """The browser tests' app, but trusting only the system's authorities (no CA setting)."""
    server = start_server(tmp_path_factory.mktemp("first-hour-app") / "server.log")
    yield server
    server.stop()


@pytest.fixture(scope="module")
def worker(django_db_setup, tmp_path_factory) -> Iterator[Worker]:
    """The browser tests' worker, without a CA setting either: the account carries its CA."""
    started = Worker(
        tmp_path_factory.mktemp("first-hour-worker") / "worker.log",
        MAILFATHOM_KEYRING=TEST_KEYRING,
        MAILFATHOM_EMBEDDING_PROVIDER="none",
    )
    yield started
    started.stop()


@pytest.fixture
def mailbox_user(dovecot) -> MailUser:
    """A Dovecot user with a little mail in INBOX and Sent before the operator arrives."""
    user = add_user(dovecot)
    user.append("INBOX", messages(INBOX_SUBJECTS, INBOX_DAYS_AGO, "colleague@example.org"))
    user.append("Sent", messages(SENT_SUBJECTS, SENT_DAYS_AGO, "operator@example.org"))
    return user


def ask_over_mcp(app: Server, key: str, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """Call `tool` with the real MCP client, as Claude Desktop would, from a thread of its own:
    the one Playwright runs on already has an event loop running."""
    with ThreadPoolExecutor(max_workers=1) as pool:
        return payload(pool.submit(call_tool, app, key, tool, arguments).result())


def test_first_hour(page, operator: Operator, screenshots: Screenshots, app, worker, dovecot, mailbox_user):
    steps.log_in(page, operator.username, operator.password)
    screenshots.take(page, "logged-in")

    steps.expect_port_to_follow_security(page)
    steps.fill_account_form(
        page,
        steps.AccountSettings(
            account_id="work",
            display_name="Work mail",
            host=dovecot.host,
            port=dovecot.imap_port,
            security=Security.STARTTLS,
            username=mailbox_user.name,
            password=mailbox_user.password,
            ca_file=dovecot.ca_path,
        ),
    )
    screenshots.take(page, "account-form")
    account_pk = steps.save_account(page)
    screenshots.take(page, "account-added")

    # One click: the test, then INBOX and the SPECIAL-USE folders mapped (Junk, Trash hidden).
    mapped = steps.test_and_map(page)
    assert {"inbox", "sent", "drafts", "junk", "trash"} <= set(mapped), mapped
    mapping_message = page.locator(".messagelist li").first.inner_text()
    for hidden in ("junk (Junk", "trash (Trash"):
        assert re.search(re.escape(hidden) + r"[^)]*hidden from tools\)", mapping_message), mapping_message
    assert not re.search(r"inbox \(INBOX[^)]*hidden", mapping_message), mapping_message
    # The drafting examples' heading is a plural people can read.
    expect(page.get_by_role("heading", name="Drafting examples (few-shot)")).to_have_count(1)
    expect(page.get_by_text("(few-shot)s")).to_have_count(0)
    screenshots.take(page, "folders-mapped")

    # The operator keeps the status page open in a tab of its own: the account has folders
    # mapped and has never synchronized.
    status = steps.open_status_page_in_a_new_tab(page)
    steps.expect_status_row(steps.status_account_row(status, "work"), state="never", stored=0, server=None)
    screenshots.take(status, "status-before-first-synchronization")

    # Back on the account's page, the first run starts from its own "Synchronize now".
    page.bring_to_front()
    steps.synchronize_from_account_page(page, account_pk)
    screenshots.take(page, "first-synchronization-queued")

    # The status page, never reloaded, shows the run's result on its next refreshes.
    status.bring_to_front()
    steps.expect_status_row(
        steps.status_account_row(status, "work"),
        state="idle",
        stored=len(INBOX_SUBJECTS) + len(SENT_SUBJECTS),
        server=len(INBOX_SUBJECTS) + len(SENT_SUBJECTS),
    )
    folders = dict(Folder.objects.filter(account_id=account_pk).values_list("mapping__alias", "pk"))
    for alias, count in {"inbox": len(INBOX_SUBJECTS), "sent": len(SENT_SUBJECTS), "junk": 0}.items():
        steps.expect_status_row(
            steps.status_folder_row(status, folders[alias]), state="idle", stored=count, server=count
        )
    assert steps.still_the_same_document(status), "the status page was reloaded"
    # The mail chart counts each email on its own date, not on the day it was stored.
    steps.expect_mail_per_day(
        status,
        {sent_on(d).date().isoformat(): 1 for d in INBOX_DAYS_AGO + SENT_DAYS_AGO},
        stored_today=len(INBOX_SUBJECTS) + len(SENT_SUBJECTS),
    )
    steps.expect_coverage_chart_axes(status)
    screenshots.take(status, "status-after-first-synchronization")
    status.close()

    # New mail arrives; the operator asks for a run from the folder list rather than wait for the poll.
    steps.wait_for_folder_counts(
        page, account_pk, {"INBOX": len(INBOX_SUBJECTS), "Sent": len(SENT_SUBJECTS), "Junk": 0}
    )
    mailbox_user.append("INBOX", messages(LATER_SUBJECTS, LATER_DAYS_AGO, "colleague@example.org"))
    steps.synchronize_from_folder_list(page, account_pk)
    screenshots.take(page, "synchronization-queued-from-folder-list")
    steps.wait_for_folder_counts(page, account_pk, {"INBOX": len(INBOX_SUBJECTS) + len(LATER_SUBJECTS)})
    steps.expect_folder_states_in_words(page, account_pk)
    screenshots.take(page, "synchronized-again")

    steps.open_email(page, "Invoice 1043")
    steps.expect_email_page_for_people(page, sender="colleague@example.org", folder_alias="inbox")
    screenshots.take(page, "email-page-technical-details-opened")

    page.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=app.base)
    key = steps.create_mcp_key(page, "Claude Desktop")
    assert steps.copy_from_key_page(page, "mcp-key") == key
    url, snippets = steps.client_snippets(page)
    assert url == app.url  # the full URL, scheme, host and port included
    assert all(url in snippet for snippet in snippets.values()), snippets
    desktop = json.loads(snippets["claude-desktop"])["mcpServers"]["mailfathom"]
    assert desktop["command"] == "npx" and desktop["args"][:3] == ["-y", "mcp-remote", url]
    assert desktop["env"] == {"AUTH_HEADER": f"Bearer {key}"}
    assert json.loads(snippets["cursor"])["mcpServers"]["mailfathom"]["headers"] == {
        "Authorization": f"Bearer {key}"
    }
    assert json.loads(snippets["vscode"])["servers"]["mailfathom"]["url"] == url
    assert key in snippets["claude-code"]
    assert steps.copy_from_key_page(page, "mcp-client-config-claude-desktop") == snippets["claude-desktop"]
    # Every snippet holding the key has it painted over (VS Code's asks for it instead).
    assert steps.wrap_the_key_for_masking(page, key) == 3
    screenshots.take(page, "mcp-key-and-client-configuration", hide=steps.KEY_ON_THE_PAGE)

    accounts = ask_over_mcp(app, key, "list_accounts", {})
    assert [account["accountId"] for account in accounts["accounts"]] == ["work"]
    listed = ask_over_mcp(app, key, "list_emails", {"pageSize": 50})
    assert sorted(email["subject"] for email in listed["emails"]) == sorted(
        INBOX_SUBJECTS + SENT_SUBJECTS + LATER_SUBJECTS
    )

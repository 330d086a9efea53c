"""What an operator does in the admin, one function per step, as a browser test performs it.

Each step starts from wherever the previous one left the page, waits for what the operator
would see before going on (Playwright's expect, which retries until its timeout), and
returns what later steps need. A step fails with the page's own words when the admin
answers something else. The first-hour test (test_first_hour.py) chains them; other browser
tests reuse them.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from dataclasses import dataclass

from playwright.sync_api import Page, expect

from mailbox import tasks

# A synchronization by a worker on a busy 2-core machine: generous, it catches a hang only.
SYNC_SECONDS = 120.0
RELOAD_INTERVAL_SECONDS = 0.5


@dataclass(frozen=True)
class AccountSettings:
    """What the operator types into the "Add mail account" form."""

    account_id: str
    display_name: str
    host: str
    port: int
    security: str  # a value of accounts.models.Security
    username: str
    password: str


def log_in(page: Page, username: str, password: str) -> None:
    """Log in through admin's own form; end on the admin index."""
    page.goto("/admin/login/?next=/admin/")
    page.fill("#id_username", username)
    page.fill("#id_password", password)
    page.click("#login-form input[type=submit]")
    expect(page.locator("#user-tools")).to_contain_text(username)


def fill_account_form(page: Page, account: AccountSettings) -> None:
    """Open "Add mail account" and type the account's settings in; nothing is saved yet."""
    page.goto("/admin/accounts/mailaccount/add/")
    page.fill("#id_account_id", account.account_id)
    page.fill("#id_display_name", account.display_name)
    page.fill("#id_imap_host", account.host)
    page.fill("#id_imap_port", str(account.port))
    page.select_option("#id_security", account.security)
    page.fill("#id_username", account.username)
    page.fill("#id_credential", account.password)


def save_account(page: Page) -> int:
    """Save the account form and continue editing; return the new account's pk."""
    page.click("input[name=_continue]")
    expect(page.locator(".messagelist .success")).to_contain_text("was added successfully")
    match = re.search(r"/admin/accounts/mailaccount/(\d+)/change/", page.url)
    assert match, page.url
    return int(match.group(1))


def run_connection_test(page: Page) -> list[str]:
    """From the account page, test the saved settings; return the server folders offered for mapping."""
    page.click("text=Test connection and map folders")
    page.click("input[name=_test_connection]")
    result = page.locator("#connection-result")
    expect(result).to_be_visible()
    assert "success" in (result.get_attribute("class") or ""), result.inner_text()
    return page.locator("#remote-folders tbody tr td:nth-child(2)").all_inner_texts()


def apply_mappings(page: Page) -> int:
    """Create the folder mappings the connection test ticked; return how many were created."""
    page.click("#folder-mapping-form input[type=submit]")
    message = page.locator(".messagelist .success")
    expect(message).to_contain_text("folder mapping")
    created = re.search(r"(\d+) folder mappings? created", message.inner_text())
    assert created, message.inner_text()
    return int(created.group(1))


def start_first_synchronization(page: Page, account_pk: int) -> None:
    """Queue the account's first synchronization run, as admin's "Synchronize now" does.

    Before a first run the account has no folder rows, so the folder list's action has
    nothing to select; this queues the same forced run (mailbox.tasks.sync_account) for
    the worker, and leaves the page on the account.
    """
    tasks.sync_account.delay(account_pk, force=True)
    page.goto(f"/admin/accounts/mailaccount/{account_pk}/change/")


def open_folder_list(page: Page, account_pk: int) -> None:
    page.goto(f"/admin/mailbox/folder/?account__id__exact={account_pk}")


def folder_counts(page: Page) -> dict[str, int]:
    """The folder list as shown: server folder name -> messages stored."""
    counts = {}
    for row in page.locator("#result_list tbody tr").all():
        name = row.locator("td.field-remote_name").inner_text().strip()
        counts[name] = int(row.locator("td.field-message_count").inner_text().strip())
    return counts


def wait_for_folder_counts(page: Page, account_pk: int, expected: dict[str, int]) -> None:
    """Reload the account's folder list until it shows `expected` messages in those folders."""
    open_folder_list(page, account_pk)
    wait_for_page(
        page,
        lambda: {name: count for name, count in folder_counts(page).items() if name in expected} == expected,
        describe=lambda: f"the folder list shows {folder_counts(page)}, not {expected}",
    )


def synchronize_from_folder_list(page: Page, account_pk: int) -> None:
    """Select every folder of the account and run the list's "Synchronize now" action."""
    open_folder_list(page, account_pk)
    page.check("#action-toggle")
    page.select_option("select[name=action]", "synchronize_now")
    page.click("button[name=index]")
    expect(page.locator(".messagelist .success")).to_contain_text("Queued 1 synchronization run")


def create_mcp_key(page: Page, name: str) -> str:
    """Add an MCP API key for every account; return the key, which the page shows once."""
    page.goto("/admin/accounts/mcpapikey/add/")
    page.fill("#id_name", name)
    page.click("input[name=_save]")
    expect(page.get_by_role("heading", name="MCP API key created").first).to_be_visible()
    key = page.locator("#content input[readonly]").input_value()
    assert key, "the key page shows no key"
    return key


def wait_for_page(
    page: Page,
    condition: Callable[[], bool],
    *,
    describe: Callable[[], str],
    seconds: float = SYNC_SECONDS,
) -> None:
    """Reload `page` until `condition()` holds for what it shows; fail with `describe()` after `seconds`."""
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() >= deadline:
            raise AssertionError(describe())
        time.sleep(RELOAD_INTERVAL_SECONDS)
        page.reload()

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
from pathlib import Path

from playwright.sync_api import Page, expect

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
    ca_file: Path | None = None  # the server's in-house CA, uploaded with the account


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
    if account.ca_file is not None:
        page.set_input_files("#id_imap_ca_upload", str(account.ca_file))


def expect_port_to_follow_security(page: Page) -> None:
    """On "Add mail account": the port moves with the security choice while the operator has
    not typed one (993 for implicit TLS, 143 for STARTTLS), and a typed port stays."""
    page.goto("/admin/accounts/mailaccount/add/")
    port = page.locator("#id_imap_port")
    expect(port).to_have_value("993")
    page.select_option("#id_security", "starttls")
    expect(port).to_have_value("143")
    page.select_option("#id_security", "tls")
    expect(port).to_have_value("993")
    port.fill("10993")
    page.select_option("#id_security", "starttls")
    expect(port).to_have_value("10993")


def save_account(page: Page) -> int:
    """Save the account form and continue editing; return the new account's pk."""
    page.click("input[name=_continue]")
    expect(page.locator(".messagelist .success")).to_contain_text("was added successfully")
    match = re.search(r"/admin/accounts/mailaccount/(\d+)/change/", page.url)
    assert match, page.url
    return int(match.group(1))


def test_and_map(page: Page) -> list[str]:
    """On the account page press "Test connection and map folders" (one click); return the aliases mapped.

    Ends back on the account page, its success message naming each folder mapped with its
    message count ("inbox (INBOX, 3 messages); junk (Junk, 1 message, hidden from tools)").
    """
    page.click("#test-and-map")
    message = page.locator(".messagelist li").first
    expect(message).to_be_visible()
    text = message.inner_text()
    assert "success" in (message.get_attribute("class") or ""), text
    return re.findall(r"(?:^|; |: )([^;:() ]+) \(", text.split("Mapped", 1)[-1])


def run_connection_test(page: Page) -> list[str]:
    """From the account page, open the by-hand page and test; return the server folders offered."""
    page.click("#map-by-hand")
    page.click("input[name=_test_connection]")
    result = page.locator("#connection-result")
    expect(result).to_be_visible()
    assert "success" in (result.get_attribute("class") or ""), result.inner_text()
    return page.locator("#remote-folders tbody tr td:nth-child(2)").all_inner_texts()


def apply_mappings(page: Page) -> int:
    """Create the folder mappings the by-hand page ticked; return how many were created."""
    page.click("#folder-mapping-form input[type=submit]")
    message = page.locator(".messagelist .success")
    expect(message).to_contain_text("folder mapping")
    created = re.search(r"(\d+) folder mappings? created", message.inner_text())
    assert created, message.inner_text()
    return int(created.group(1))


def synchronize_from_account_page(page: Page, account_pk: int) -> None:
    """On the account's page press "Synchronize now"; end back on that page with the run queued.

    It works before the first run: the run creates the folder rows from the mappings.
    """
    page.goto(f"/admin/accounts/mailaccount/{account_pk}/change/")
    page.click("#sync-now-form #sync-now")
    expect(page.locator(".messagelist .success")).to_contain_text("Queued 1 synchronization run")


def open_status_page_in_a_new_tab(page: Page) -> Page:
    """Open "System status" from the current page's link in a tab of its own, as an operator
    keeps it open beside the page they work in; return that tab, in front."""
    with page.context.expect_page() as opened:
        page.click("#system-status-link", modifiers=["ControlOrMeta"])
    status = opened.value
    status.wait_for_load_state()
    assert status.url.endswith("/admin/status/"), status.url
    status.bring_to_front()  # the page refreshes itself only while it is visible
    expect(status.locator("#system-status")).to_be_visible()
    # Set once in this document: a full reload would lose it (see still_the_same_document).
    status.evaluate("window.firstHourDocument = true")
    return status


def still_the_same_document(page: Page) -> bool:
    """True while `page` shows the document open_status_page_in_a_new_tab loaded: never reloaded."""
    return page.evaluate("window.firstHourDocument === true")


def status_account_row(status: Page, account_id: str):
    return status.locator(f"tr#status-account-{account_id}")


def status_folder_row(status: Page, folder_pk: int):
    return status.locator(f"tr#status-folder-{folder_pk}")


def expect_status_row(
    row, *, state: str, stored: int, server: int | None, seconds: float = SYNC_SECONDS
) -> None:
    """Wait, without reloading, until the status page's self-refresh shows `row` so."""
    timeout = seconds * 1000
    expect(row).to_have_attribute("data-state", state, timeout=timeout)
    expect(row).to_have_attribute("data-stored", str(stored), timeout=timeout)
    expect(row).to_have_attribute("data-server", "" if server is None else str(server), timeout=timeout)


def expect_mail_per_day(status: Page, days: dict[str, int], *, stored_today: int) -> None:
    """The status page's mail chart has a bar on each mail date in `days` with its count (an
    import is not one bar on the day it was stored), and says how much was stored today."""
    chart = status.locator("svg#chart-stored-per-day")
    expect(chart.locator(".chart-window")).to_contain_text("By each email's date")
    expect(chart).to_have_attribute("data-stored-today", str(stored_today))
    shown = {
        bar.get_attribute("data-day"): int(bar.get_attribute("data-stored") or 0)
        for bar in chart.locator("rect.chart-bar").all()
    }
    assert {day: count for day, count in shown.items() if count} == days, shown


def expect_coverage_chart_axes(status: Page) -> None:
    """The coverage chart labels its own axes: 0, 50 and 100 % up the side, and a time window
    whose two ends differ along the bottom."""
    chart = status.locator("svg#chart-coverage")
    assert chart.locator(".chart-y-label").all_text_contents() == ["100 %", "50 %", "0 %"]
    first, last = (
        chart.locator(".chart-x-first").text_content(),
        chart.locator(".chart-x-last").text_content(),
    )
    assert first and last and first != last, (first, last)


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


def expect_folder_states_in_words(page: Page, account_pk: int) -> None:
    """The folder list says whether a run holds each folder in words; no red icons."""
    open_folder_list(page, account_pk)
    states = page.locator("#result_list td.field-lease_held").all_inner_texts()
    assert states and set(states) <= {"free", "in use by a run"}, states
    expect(page.locator("#result_list img[src*='icon-no']")).to_have_count(0)


def open_email(page: Page, subject: str) -> None:
    """From the email list, open the email with this subject (as a person clicks its line)."""
    page.goto("/admin/mailbox/email/")
    page.locator("#result_list").get_by_role("link", name=subject, exact=True).click()
    expect(page.locator(".field-subject")).to_contain_text(subject)


def expect_email_page_for_people(page: Page, *, sender: str, folder_alias: str) -> None:
    """An email's page shows what a person reads: the whole sender, the folder by its alias,
    and the server's bookkeeping (UIDVALIDITY, UID, TNEF) folded under "Technical details"."""
    expect(page.locator(".field-from_shown .readonly")).to_have_text(sender)
    expect(page.locator(".field-folder_name .readonly")).to_have_text(folder_alias)
    expect(page.locator(".field-bulk_shown .readonly")).to_have_text("no")
    expect(page.locator(".field-encrypted_shown .readonly")).to_have_text("no")
    expect(page.locator("fieldset img[src*='icon-no']")).to_have_count(0)  # no red ✗ for "no"
    technical = page.locator(".field-uidvalidity_shown")
    expect(technical).to_be_hidden()
    page.get_by_text("Technical details", exact=True).click()
    expect(technical).to_be_visible()
    expect(page.locator(".field-uid_shown")).to_be_visible()


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
    expect(page.get_by_role("heading", name="MCP API key created")).to_have_count(1)
    key = page.locator("#mcp-key").input_value()
    assert key, "the key page shows no key"
    return key


CLIENTS = ("claude-desktop", "claude-code", "cursor", "vscode")


def copy_from_key_page(page: Page, target: str) -> str:
    """Press the Copy button beside `target` (an element id); return what the clipboard holds.

    The page's browser context must have been granted clipboard access."""
    button = page.locator(f"button.mcp-copy[data-copy-target={target}]")
    button.click()
    expect(button).to_have_text("Copied")
    return page.evaluate("navigator.clipboard.readText()")


def client_snippets(page: Page) -> tuple[str, dict[str, str]]:
    """On the key page: the endpoint URL it names, and each client's configuration snippet."""
    url = page.locator("#mcp-endpoint-url").inner_text().strip()
    snippets = {client: page.locator(f"#mcp-client-config-{client}").inner_text() for client in CLIENTS}
    return url, snippets


# What a screenshot of the key page paints over: the key's field, and the key wherever a
# snippet holds it (wrapped in a span of its own first, so the rest of the snippet shows).
KEY_ON_THE_PAGE = "#mcp-key, .first-hour-secret"


def wrap_the_key_for_masking(page: Page, key: str) -> int:
    """Wrap each occurrence of `key` in the snippets in a span KEY_ON_THE_PAGE covers; return
    how many snippets held it."""
    return page.evaluate(
        """(key) => {
            let wrapped = 0;
            for (const pre of document.querySelectorAll(".mcp-client-config pre")) {
                const parts = pre.textContent.split(key);
                if (parts.length < 2) continue;
                wrapped += 1;
                pre.textContent = "";
                parts.forEach((part, i) => {
                    if (i > 0) {
                        const secret = document.createElement("span");
                        secret.className = "first-hour-secret";
                        secret.textContent = key;
                        pre.append(secret);
                    }
                    pre.append(part);
                });
            }
            return wrapped;
        }""",
        key,
    )


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


def start_mailbox_sign_in(page: Page, account_pk: int, label: str = "Sign in with your provider") -> None:
    """On the account's page press its sign-in button; end on the provider's login page."""
    page.goto(f"/admin/accounts/mailaccount/{account_pk}/change/")
    page.get_by_role("button", name=label).click()
    expect(page.locator("#loginForm")).to_be_visible()


def sign_in_at_provider(page: Page, username: str, password: str) -> None:
    """On the provider's login page sign in; end on its consent page."""
    page.fill("#loginForm #id_username", username)
    page.fill("#loginForm #id_password", password)
    page.click("#loginForm button[type=submit]")
    expect(page.locator("#authorizationForm")).to_be_visible()


def answer_consent(page: Page, *, allow: bool) -> None:
    """On the provider's consent page allow or cancel; end back in admin, on the message it shows."""
    form = page.locator("#authorizationForm")
    (form.locator("input[name=allow]") if allow else form.get_by_role("button", name="Cancel")).click()
    expect(page.locator(".messagelist")).to_be_visible()

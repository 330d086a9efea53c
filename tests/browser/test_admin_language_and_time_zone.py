"""A German browser gets the admin in German, and a person's own time zone shifts every time shown.

The browser context asks for de-DE, as a German Chromium does (Accept-Language); the
operator chose Europe/Berlin on the time zone page, in the browser, before opening an email
received at a known UTC instant.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime

import pytest
from playwright.sync_api import Browser, Page, expect

from accounts.models import UserPreference
from tests.browser import steps
from tests.browser.conftest import STEP_TIMEOUT_MS, VIEWPORT, Operator, Screenshots
from tests.factories import MailAccountFactory
from tests.mailbox.factories import EmailFactory, mapped_folder
from tests.mcp.servers import Server

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.dovecot, pytest.mark.slow]

RECEIVED = datetime(2026, 1, 15, 9, 5, tzinfo=UTC)  # 10:05 in Berlin (winter time, UTC+1)


@pytest.fixture
def german_page(browser: Browser, app: Server) -> Iterator[Page]:
    """A fresh context like the suite's `page`, but a German browser."""
    context = browser.new_context(base_url=app.base, viewport=VIEWPORT, locale="de-DE")
    context.set_default_timeout(STEP_TIMEOUT_MS)
    context.add_init_script("localStorage.setItem('django.admin.navSidebarIsOpen', 'false')")
    yield context.new_page()
    context.close()


def test_a_german_browser_gets_german_admin_and_times_in_the_persons_zone(
    german_page: Page, operator: Operator, screenshots: Screenshots
):
    page = german_page
    account = MailAccountFactory(account_id="berlin", display_name="Berlin office")
    EmailFactory(folder=mapped_folder(account, "inbox"), subject="Quarterly figures", received_at=RECEIVED)

    steps.log_in(page, operator.username, operator.password)
    expect(page.locator("#user-tools")).to_contain_text("Willkommen")
    expect(page.locator("#user-tools")).to_contain_text("Abmelden")
    expect(page.locator("#system-status-module")).to_contain_text("Systemstatus")
    screenshots.take(page, "index-in-german")

    # Before choosing: the deployment's zone (UTC).
    page.goto("/admin/mailbox/email/")
    expect(page.locator("td.field-received").first).to_have_text("2026-01-15 09:05")

    page.locator("#time-zone-link").click()
    page.fill("#id_time_zone", "Europe/Berlin")
    page.locator("#time-zone-form input[type=submit]").click()
    expect(page.locator(".messagelist .success")).to_contain_text("Ihre Zeitzone ist gespeichert.")
    expect(page.locator("#time-zone-current")).to_contain_text("Europe/Berlin")
    assert UserPreference.objects.get(user__username=operator.username).time_zone == "Europe/Berlin"
    screenshots.take(page, "time-zone-saved")

    page.goto("/admin/mailbox/email/")
    expect(page.locator("td.field-received").first).to_have_text("2026-01-15 10:05")
    page.locator("#result_list a").filter(has_text="Quarterly figures").click()
    # The email page: received in Berlin time, the technical fields folded away, in German.
    expect(page.locator(".field-received_at .readonly")).to_contain_text("10:05")
    expect(page.locator("fieldset.collapse")).to_contain_text("Technische Details")
    expect(page.locator(".field-uid_shown")).not_to_be_visible()
    screenshots.take(page, "email-in-berlin-time")

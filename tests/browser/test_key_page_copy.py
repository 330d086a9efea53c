"""The key page's copy buttons put the key and each client's configuration on the clipboard.

A browser context of its own is granted clipboard access (as a person's browser grants it
to a page they clicked on), so the test reads back exactly what a click copied.
"""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from playwright.sync_api import Browser, expect

from tests.browser import steps
from tests.browser.conftest import STEP_TIMEOUT_MS, VIEWPORT
from tests.mcp.servers import Server

pytestmark = [pytest.mark.django_db(transaction=True)]


PASSWORD = "copy-buttons-secret"


def test_each_copy_button_copies_its_own_text_whole(browser: Browser, app: Server, settings):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.PBKDF2PasswordHasher"]  # the server's
    User.objects.create_superuser("keeper", password=PASSWORD)
    context = browser.new_context(base_url=app.base, viewport=VIEWPORT, locale="en-US")
    context.grant_permissions(["clipboard-read", "clipboard-write"], origin=app.base)
    context.set_default_timeout(STEP_TIMEOUT_MS)
    page = context.new_page()
    try:
        steps.log_in(page, "keeper", PASSWORD)
        key = steps.create_mcp_key(page, "copy test")

        page.click("button.mcp-copy[data-copy-target=mcp-key]")
        expect(page.locator("button.mcp-copy[data-copy-target=mcp-key]")).to_have_text("Copied")
        assert page.evaluate("navigator.clipboard.readText()") == key

        target = "mcp-client-config-claude-code"
        page.click(f"button.mcp-copy[data-copy-target={target}]")
        copied = page.evaluate("navigator.clipboard.readText()")
        assert copied == page.locator(f"#{target}").text_content()
        assert key in copied and "claude mcp add" in copied
        # The one-liner wraps inside its box instead of running off the page's right edge.
        box = page.locator(f"#{target}").bounding_box()
        assert box is not None and box["x"] + box["width"] <= VIEWPORT["width"]
    finally:
        context.close()

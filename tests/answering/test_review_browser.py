"""The review queue in a real browser: open the queue, open a draft, edit it, approve it.

Headless Debian Chromium driven by Playwright's sync API against pytest-django's
live_server (this process, this test database), with the account's Drafts folder on the
session's Dovecot. Each step leaves a PNG under var/screenshots/test_review_browser/.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from django.contrib.auth.models import Permission

from answering.models import Draft, DraftStatus, Verdict
from mailfathom import embedded
from tests.answering.drafts_support import DraftFactory, answered_email, drafting_account, drafts_on_server
from tests.browser.chromium import launched_chromium
from tests.dovecot import dovecot_server  # noqa: F401
from tests.mailbox.imap_support import add_user

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.dovecot, pytest.mark.slow]

STEP_TIMEOUT_MS = 30_000  # one action or navigation on a busy shared machine, not a measurement
PASSWORD = "pw-reviewer-browser-1"
EDITED = "Dear Ms Buyer,\n\nyour order 4711 leaves us on Monday, not Friday.\n\nKind regards\n"


@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
    with launched_chromium() as launched:
        yield launched


@pytest.fixture
def page(browser, live_server):
    context = browser.new_context(base_url=live_server.url, viewport={"width": 1400, "height": 900})
    context.set_default_timeout(STEP_TIMEOUT_MS)
    opened = context.new_page()
    yield opened
    context.close()


class Shots:
    def __init__(self, directory: Path) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        self.directory = directory
        self.count = 0

    def take(self, page, step: str) -> None:
        self.count += 1
        page.screenshot(path=str(self.directory / f"{self.count:02d}-{step}.png"), full_page=True)


@pytest.fixture
def shots(request) -> Shots:
    return Shots(embedded.var_dir() / "screenshots" / "test_review_browser" / request.node.name)


@pytest.fixture
def reviewer(django_user_model):
    """A staff user holding only the drafts' view and change permissions and the right to read mail."""
    user = django_user_model.objects.create_user("reviewer", password=PASSWORD, is_staff=True)
    user.user_permissions.add(
        *Permission.objects.filter(
            content_type__app_label__in=["answering", "mailbox"],
            codename__in=["view_draft", "change_draft", "view_mail_content"],
        )
    )
    return user


def test_open_the_queue_edit_a_draft_and_approve_it_into_the_drafts_folder(page, shots, reviewer, dovecot):
    mail_user = add_user(dovecot)
    account = drafting_account(mail_user, append_mode="approved", display_name="Shop orders")
    answered = answered_email(account, body="Hello,\n\nplease confirm my order 4711 <b>today</b>.\n\nBea")
    draft = DraftFactory(
        email=answered,
        verdict=Verdict.NEEDS_REVIEW,
        reasons=["the date Friday appears in no source"],
    )
    DraftFactory(
        email=answered_email(account, message_id="other@customer.example"), status=DraftStatus.APPROVED
    )

    page.goto("/admin/login/?next=/admin/answering/draft/")
    page.fill("#id_username", "reviewer")
    page.fill("#id_password", PASSWORD)
    page.click("input[type=submit]")
    page.wait_for_selector("#result_list")
    shots.take(page, "queue")
    rows = page.locator("#result_list tbody tr")
    assert rows.count() == 2
    assert "Pending review" in rows.nth(0).inner_text()  # pending first

    rows.nth(0).locator("th a").click()
    page.wait_for_selector("#answered-body")
    shots.take(page, "review")
    assert "please confirm my order 4711 <b>today</b>." in page.inner_text("#answered-body")  # as text
    assert "the date Friday appears in no source" in page.inner_text("#draft-reasons")
    assert page.input_value("#id_body") == draft.body

    page.fill("#id_body", EDITED)
    shots.take(page, "edited")
    page.click("#save-and-approve")
    page.wait_for_selector(".messagelist .success")
    shots.take(page, "approved")
    assert "It is in the Drafts folder" in page.inner_text(".messagelist")
    assert "Edited and approved" in page.inner_text("#draft-status")

    stored = Draft.objects.get(pk=draft.pk)
    assert (stored.status, stored.body, stored.reviewed_by) == (DraftStatus.EDITED, EDITED, reviewer)
    copies = drafts_on_server(mail_user)
    assert list(copies) == [stored.remote_uid]
    flags, message = copies[stored.remote_uid]
    assert "\\Draft" in flags
    assert message["In-Reply-To"] == "<order-4711@customer.example>"
    assert message.get_content().replace("\r\n", "\n") == EDITED

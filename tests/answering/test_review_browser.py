"""The review queue in a real browser: open the queue, open a draft, edit it, approve it.

Headless Debian Chromium driven by Playwright's sync API against pytest-django's
live_server (this process, this test database); the delivery test puts the account's
Drafts folder on the session's Dovecot. The verdict badge's contrast is measured from
computed styles in Django admin's light and dark themes (chosen by the browser's colour
scheme and by the admin's own theme switch). Each step leaves a PNG under
var/screenshots/test_review_browser/.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.contrib.auth.models import Permission

from answering.models import Draft, DraftStatus, Verdict
from mailbox.models import Participant, ParticipantRole
from tests.answering.drafting.support import LETTER
from tests.answering.drafts_support import DraftFactory, answered_email, drafting_account, drafts_on_server
from tests.answering.test_review_admin import PRICE, judged_draft, review_shop, with_letter
from tests.browser.chromium import launched_chromium
from tests.mailbox.imap_support import add_user
from tests.support import screenshots_dir

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

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


def log_in(page, then: str = "/admin/answering/draft/") -> None:
    page.goto(f"/admin/login/?next={then}")
    page.fill("#id_username", "reviewer")
    page.fill("#id_password", PASSWORD)
    page.click("input[type=submit]")
    page.wait_for_selector("#result_list" if then.endswith("/draft/") else "#content-main")


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
    return Shots(screenshots_dir() / "test_review_browser" / request.node.name)


@pytest.fixture
def reviewer(django_user_model):
    """A staff user holding only the drafts' view and change permissions and the right to read mail.

    An operator (see_every_account), so every account's drafts are theirs to approve; people
    are tests/accounts/test_people_admin.py's.
    """
    user = django_user_model.objects.create_user("reviewer", password=PASSWORD, is_staff=True)
    user.user_permissions.add(
        *Permission.objects.filter(
            content_type__app_label__in=["answering", "mailbox"],
            codename__in=["view_draft", "change_draft", "view_mail_content"],
        ),
        Permission.objects.get(codename="see_every_account"),
    )
    return user


@pytest.mark.dovecot
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

    log_in(page)
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


# --- contrast, measured ---------------------------------------------------------------------

WCAG_AA = 4.5
_RGB = re.compile(r"rgba?\(\s*([\d.]+)[,\s]+([\d.]+)[,\s]+([\d.]+)(?:\s*[,/]\s*([\d.]+%?))?\s*\)")
# The colour and every background from the element up to <html>, as the browser computed them.
STYLES_UP_THE_TREE = """(element) => {
    const backgrounds = [];
    for (let node = element; node; node = node.parentElement) {
        backgrounds.push(getComputedStyle(node).backgroundColor);
    }
    return {color: getComputedStyle(element).color, backgrounds: backgrounds};
}"""


def _rgba(css: str) -> tuple[float, float, float, float]:
    found = _RGB.fullmatch(css.strip())
    assert found is not None, f"a computed colour in a form this test does not read: {css}"
    red, green, blue, alpha = found.groups()
    if alpha is None:
        opacity = 1.0
    elif alpha.endswith("%"):
        opacity = float(alpha[:-1]) / 100
    else:
        opacity = float(alpha)
    return float(red), float(green), float(blue), opacity


def _over(top: tuple[float, float, float, float], below: tuple[float, float, float]) -> tuple[float, ...]:
    red, green, blue, alpha = top
    return tuple(
        alpha * value + (1 - alpha) * under for value, under in zip((red, green, blue), below, strict=True)
    )


def _luminance(rgb: tuple[float, ...]) -> float:
    """WCAG 2.x relative luminance of an sRGB colour with 0-255 channels."""
    linear = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in (v / 255 for v in rgb)]
    return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]


def contrast_ratio(first: tuple[float, ...], second: tuple[float, ...]) -> float:
    lighter, darker = sorted((_luminance(first), _luminance(second)), reverse=True)
    return (lighter + 0.05) / (darker + 0.05)


def effective_colours(locator) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """(text, background) of an element as seen: backgrounds composited from the canvas (white) up."""
    styles = locator.evaluate(STYLES_UP_THE_TREE)
    background: tuple[float, ...] = (255.0, 255.0, 255.0)
    for css in reversed(styles["backgrounds"]):
        background = _over(_rgba(css), background)
    return _over(_rgba(styles["color"]), background), background


def test_contrast_ratio_is_the_wcag_one():
    assert contrast_ratio((0, 0, 0), (255, 255, 255)) == pytest.approx(21.0)
    assert contrast_ratio((119, 119, 119), (255, 255, 255)) == pytest.approx(4.48, abs=0.01)
    # The old "Ready": the success message background as text on white.
    assert contrast_ratio((0x70, 0xBF, 0x2B), (255, 255, 255)) < WCAG_AA


# Browser colour scheme, the admin's stored theme choice (None: never chosen, "auto"), and
# whether the admin should then be dark.
THEMES = {
    "light": ("light", None, False),
    "dark-by-the-browser": ("dark", None, True),
    "dark-by-the-admin-switch": ("light", "dark", True),
    "light-by-the-admin-switch": ("dark", "light", False),
}


@pytest.mark.parametrize("theme", list(THEMES))
def test_the_verdict_badge_reaches_aa_contrast_in_each_admin_theme(browser, live_server, reviewer, theme):
    scheme, chosen, dark = THEMES[theme]
    built = review_shop()
    flagged = judged_draft(built, with_letter(PRICE))
    assert flagged.verdict == Verdict.NEEDS_REVIEW
    ready = DraftFactory(email=answered_email(built.shop.account, message_id="other@quist.example"))
    context = browser.new_context(
        base_url=live_server.url, viewport={"width": 1400, "height": 900}, color_scheme=scheme
    )
    context.set_default_timeout(STEP_TIMEOUT_MS)
    if chosen is not None:
        # What the admin's theme switch stores; its script reads it before the page is drawn.
        context.add_init_script(f"window.localStorage.setItem('theme', '{chosen}')")
    shots = Shots(screenshots_dir() / "test_review_browser" / f"contrast-{theme}")
    try:
        page = context.new_page()
        log_in(page)
        measured = {}
        body = _luminance(effective_colours(page.locator("body"))[1])
        assert (body < 0.1) if dark else (body > 0.8), f"the {theme} theme did not take effect"
        shots.take(page, "queue")
        for draft in (ready, flagged):
            badge = page.locator(f'#result_list tr:has(a[href*="{draft.pk}"]) .verdict-badge')
            text, background = effective_colours(badge)
            measured[f"queue {draft.get_verdict_display()}"] = contrast_ratio(text, background)
            page.goto(f"/admin/answering/draft/{draft.pk}/change/")
            badge = page.locator("#draft-verdict .verdict-badge")
            assert badge.inner_text().endswith(draft.get_verdict_display())
            text, background = effective_colours(badge)
            measured[f"page {draft.get_verdict_display()}"] = contrast_ratio(text, background)
            shots.take(page, draft.verdict)
            page.goto("/admin/answering/draft/")
        print(f"\n{theme}: " + ", ".join(f"{name} {ratio:.2f}:1" for name, ratio in measured.items()))
        assert set(measured) == {"queue Ready", "queue Needs review", "page Ready", "page Needs review"}
        assert all(ratio >= WCAG_AA for ratio in measured.values()), measured
    finally:
        context.close()


# --- the review page ------------------------------------------------------------------------


def test_the_page_shows_where_the_reply_goes_and_the_sources_by_subject(page, shots, reviewer):
    built = review_shop()
    Participant.objects.create(
        email=built.shop.answered,
        role=ParticipantRole.REPLY_TO,
        position=0,
        address="petra@quist-payments.example",
        display_name="Petra Quist",
    )
    draft = judged_draft(built)

    log_in(page, f"/admin/answering/draft/{draft.pk}/change/")
    shots.take(page, "review")

    assert page.locator("#recipient-warning").is_visible()
    assert "petra@quist-payments.example" in page.inner_text("#recipient-warning")
    assert "not to the sender petra@quist.example" in page.inner_text("#recipient-warning")
    assert page.inner_text("#reply-to-recipients") == "Petra Quist <petra@quist-payments.example>"
    assert page.locator("#reply-to-header").is_visible()
    assert "reply_to_mismatch" in page.inner_text("#draft-reasons")
    links = page.locator("#draft-sources a.source-link")
    assert links.all_inner_texts() == [
        "Your order ZX-88120",
        "Dispatch note ZX-88120",
        "Invoice <i>INV-5531</i>",
    ]
    assert all(link.is_visible() for link in links.all())
    assert f"/admin/mailbox/email/{built.other.pk}/change/" in links.nth(2).get_attribute("href")
    assert "Jon Other <jon@othercustomer.example>" in page.inner_text("#draft-sources")
    assert "Price list <2024> (part 1)" in page.inner_text("#draft-sources")


def test_saving_an_edit_judges_it_again_both_ways(page, shots, reviewer):
    draft = judged_draft(review_shop())
    assert draft.verdict == Verdict.READY
    log_in(page, f"/admin/answering/draft/{draft.pk}/change/")
    assert page.inner_text("#draft-verdict").strip().endswith("Ready")

    page.fill("#id_body", with_letter(PRICE))
    page.click("#save")
    page.wait_for_selector(".messagelist li")
    shots.take(page, "priced")
    assert "Added: unsupported_amount. The verdict is now Needs review." in page.inner_text(".messagelist")
    assert page.inner_text("#draft-verdict").strip().endswith("Needs review")
    assert page.locator("#draft-marked mark").all_inner_texts() == ["4,321 euros"]
    assert page.get_attribute("#save", "class") == "default"
    assert Draft.objects.get(pk=draft.pk).verdict == Verdict.NEEDS_REVIEW

    page.fill("#id_body", LETTER)
    page.click("#save")
    page.wait_for_selector(".messagelist li")
    shots.take(page, "cleared")
    assert "Cleared: unsupported_amount. The verdict is now Ready." in page.inner_text(".messagelist")
    assert page.inner_text("#draft-verdict").strip().endswith("Ready")
    assert page.locator("#draft-marked").count() == 0
    stored = Draft.objects.get(pk=draft.pk)
    assert (stored.verdict, stored.reasons, stored.status) == (Verdict.READY, [], DraftStatus.PENDING)


def test_approve_on_a_draft_that_needs_review_waits_for_each_reason_to_be_acknowledged(page, shots, reviewer):
    draft = judged_draft(review_shop(), with_letter(PRICE + " The courier's number is +49 30 1234567."))
    assert draft.verdict == Verdict.NEEDS_REVIEW and len(draft.reasons) == 2
    log_in(page, f"/admin/answering/draft/{draft.pk}/change/")
    boxes = page.locator("#acknowledge input[type=checkbox]")
    assert boxes.count() == 2
    assert page.get_attribute("#approve", "class") != "default"

    page.click("#approve")
    page.wait_for_selector("#review-form .errornote, #review-form .errorlist")
    shots.take(page, "refused")
    assert "63008" in page.inner_text("#review-form")
    assert Draft.objects.get(pk=draft.pk).status == DraftStatus.PENDING

    page.locator("#acknowledge input[type=checkbox]").first.check()
    page.click("#approve")
    page.wait_for_selector("#review-form .errorlist")
    assert "1 not acknowledged" in page.inner_text("#review-form")
    assert page.locator("#acknowledge input[type=checkbox]").first.is_checked()  # kept ticked
    assert Draft.objects.get(pk=draft.pk).status == DraftStatus.PENDING

    for box in page.locator("#acknowledge input[type=checkbox]").all():
        box.check()
    page.click("#approve")
    page.wait_for_selector(".messagelist .success")
    shots.take(page, "approved")
    assert "The draft is approved." in page.inner_text(".messagelist")
    assert page.inner_text("#draft-status") == "Approved"
    stored = Draft.objects.get(pk=draft.pk)
    assert (stored.status, stored.reviewed_by) == (DraftStatus.APPROVED, reviewer)
    assert [(entry["reason"], entry["by"]) for entry in stored.acknowledgements] == [
        (reason, "reviewer") for reason in draft.reasons
    ]

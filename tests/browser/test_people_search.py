"""A person in Chromium: logs in on the people login form, searches, opens a match, asks a question.

The app is a real uvicorn whose embeddings and chat are the scripted OpenAI-compatible
server (tests/mcp/answering_support.py), so search is hybrid and ask_mail is offered; the
substitute model obeys the mail (tests/answering/support.py). The person owns account
"work" only; "private" holds mail matching the same words. Each step leaves a PNG under
var/screenshots/people_search/.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from django.contrib.auth.models import Permission, User
from playwright.sync_api import Page, expect

from accounts.models import AccountMembership, MailAccount, MembershipRole
from tests.answering.support import World
from tests.browser.conftest import Screenshots
from tests.mcp.answering_support import answering_env, obedient_world
from tests.mcp.servers import Server, start_server
from tests.support import scripted_openai_server

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

PASSWORD = "people-browser-secret"


@pytest.fixture(scope="module")
def scripted():
    """One scripted server for the module's app, which is module-scoped too."""
    with scripted_openai_server() as server:
        yield server


@pytest.fixture(scope="module")
def app(django_db_setup, scripted, tmp_path_factory) -> Iterator[Server]:
    """The product's ASGI app with scripted embeddings and chat (replaces conftest's `app`)."""
    server = start_server(tmp_path_factory.mktemp("people-app") / "server.log", **answering_env(scripted))
    yield server
    server.stop()


@pytest.fixture
def world(settings, scripted) -> Iterator[World]:
    with obedient_world(settings, scripted) as built:
        yield built


@pytest.fixture
def person(transactional_db, settings, world) -> User:
    """Staff who may open admin's email pages and read mail content; owner of `work` only."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.PBKDF2PasswordHasher"]  # the server's
    user = User.objects.create_user("resident", password=PASSWORD, is_staff=True)
    user.user_permissions.add(*Permission.objects.filter(codename__in=["view_email", "view_mail_content"]))
    AccountMembership.objects.create(
        account=MailAccount.objects.get(account_id="work"), user=user, role=MembershipRole.OWNER
    )
    return user


def test_a_person_searches_opens_a_match_and_asks(page: Page, person, world, screenshots: Screenshots):
    page.goto("/people/search/")
    expect(page).to_have_url("/people/login/?next=/people/search/")
    page.fill("#id_username", "resident")
    page.fill("#id_password", PASSWORD)
    screenshots.take(page, "login")
    page.click("#people-login input[type=submit]")
    expect(page.locator("#user-tools")).to_contain_text("resident")

    page.get_by_label("Search for").fill("insurer payment")
    page.click("#people-search input[type=submit]")
    results = page.locator("#people-results")
    known = results.locator(f'tr[data-email-id="{world.work_ids[0]}"]')
    expect(known).to_contain_text("Claim 4471 insurer payment")
    expect(page.locator("#people-results-region")).to_contain_text("ranked hybrid")
    assert "PRIVATE-7731" not in page.content()
    assert world.private_id not in page.content()
    screenshots.take(page, "results")

    known.get_by_role("link", name="Claim 4471 insurer payment").click()
    expect(page).to_have_url(f"/admin/mailbox/email/{world.work_ids[0]}/change/")
    expect(page.locator("#content-main")).to_contain_text("The insurer agreed to pay 2,300 euros")
    screenshots.take(page, "email-page")

    page.go_back()
    page.get_by_label("Question").fill("What did the insurer finally agree to pay?")
    page.click("#people-ask input[type=submit]")
    answer = page.locator("#people-answer")
    expect(answer).to_contain_text("The insurer agreed to pay 2,300 euros.")
    relied_on = page.locator("#people-relied-on a")
    expect(relied_on.first).to_have_attribute("href", f"/admin/mailbox/email/{world.work_ids[0]}/change/")
    read = page.locator("#people-read li")
    assert read.count() >= 1
    assert "PRIVATE-7731" not in page.content()
    screenshots.take(page, "answer")

    answer.locator('a[href="#source-1"]').click()
    expect(page.locator("#source-1")).to_be_in_viewport()

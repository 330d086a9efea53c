"""Browser tests: Debian's Chromium, driven by Playwright, against the real app and a real worker.

What runs, per test module:
  * `app`: uvicorn serving mailfathom.asgi (admin and /mcp) against this session's test
    database, trusting the session Dovecot's test CA (MAILFATHOM_IMAP_CA_FILE), /mcp on
    with API keys;
  * `worker`: a Celery worker on the session's Redis, so a synchronization the page starts
    really runs and commits;
  * `browser`: headless /usr/bin/chromium (installed by .ci/install-services; Playwright's
    own browser download is never used).
Per test: `page` (a fresh context at 1280x800), `operator` (a superuser with a known
password; the test is transactional, so the server sees it), `logged_in_page` (that page
after the admin login form), and `screenshots`, which saves numbered PNGs of each step under
var/screenshots/<test name>/ (the artifacts a failed run leaves behind).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from django.contrib.auth.models import User
from playwright.sync_api import Browser, Page, expect

from tests.browser import steps
from tests.browser.chromium import launched_chromium
from tests.celery_worker import Worker
from tests.dovecot import DovecotServer
from tests.mcp.servers import TEST_KEYRING, Server, start_server
from tests.support import screenshots_dir

VIEWPORT = {"width": 1280, "height": 800}
STEP_TIMEOUT_MS = 30_000  # one page action or navigation on a busy 2-core machine
OPERATOR_PASSWORD = "browser-operator-secret"

expect.set_options(timeout=STEP_TIMEOUT_MS)  # what the page shows next may be slow too, not absent


@pytest.fixture(scope="module")
def app(django_db_setup, dovecot: DovecotServer, tmp_path_factory) -> Iterator[Server]:
    """The product's ASGI app under uvicorn, as `make run` serves it, on a free loopback port."""
    log_path = tmp_path_factory.mktemp("browser-app") / "server.log"
    server = start_server(log_path, MAILFATHOM_IMAP_CA_FILE=str(dovecot.ca_path))
    yield server
    server.stop()


@pytest.fixture(scope="module")
def worker(django_db_setup, dovecot: DovecotServer, tmp_path_factory) -> Iterator[Worker]:
    """A Celery worker consuming what the app queues; its log is in the failure message."""
    log_path = tmp_path_factory.mktemp("browser-worker") / "worker.log"
    started = Worker(
        log_path,
        MAILFATHOM_KEYRING=TEST_KEYRING,  # the app's: the worker decrypts what the app's admin stored
        MAILFATHOM_IMAP_CA_FILE=str(dovecot.ca_path),
        MAILFATHOM_EMBEDDING_PROVIDER="none",
    )
    yield started
    started.stop()


@pytest.fixture(scope="module")
def browser(app: Server) -> Iterator[Browser]:
    """Headless Chromium; started after the app, which must not inherit the setting below."""
    with launched_chromium() as launched:
        yield launched


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]):
    report = yield
    if report.when == "call":
        item.stash[CALL_FAILED] = report.failed
    return report


CALL_FAILED = pytest.StashKey[bool]()


@pytest.fixture
def page(browser: Browser, app: Server, request: pytest.FixtureRequest) -> Iterator[Page]:
    """A fresh browser context on the app; a failed test leaves a screenshot of where it stopped."""
    context = browser.new_context(base_url=app.base, viewport=VIEWPORT, locale="en-US")
    context.set_default_timeout(STEP_TIMEOUT_MS)
    # Admin's navigation sidebar starts folded, as an operator may leave it: the screenshots
    # then show the page's own content at full width.
    context.add_init_script("localStorage.setItem('django.admin.navSidebarIsOpen', 'false')")
    opened = context.new_page()
    yield opened
    if request.node.stash.get(CALL_FAILED, False):
        failed = screenshot_directory(request) / "failure.png"
        opened.screenshot(path=str(failed), full_page=True)
        print(f"browser test failed on {opened.url}; screenshot: {failed}")
        if "app" in request.fixturenames:  # what the server side said, when the test used it
            print(f"--- app log (end) ---\n{request.getfixturevalue('app').log()[-4000:]}")
        if "worker" in request.fixturenames:
            print(f"--- worker log (end) ---\n{request.getfixturevalue('worker').output(4000)}")
    context.close()


@dataclass(frozen=True)
class Operator:
    username: str
    password: str


@pytest.fixture
def operator(transactional_db, settings) -> Operator:
    # Hashed the product's way: the server checks it with the product's hashers, not the
    # suite's fast MD5 one.
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.PBKDF2PasswordHasher"]
    User.objects.create_superuser("operator", "operator@example.invalid", OPERATOR_PASSWORD)
    return Operator("operator", OPERATOR_PASSWORD)


@pytest.fixture
def logged_in_page(page: Page, operator: Operator) -> Page:
    steps.log_in(page, operator.username, operator.password)
    return page


class Screenshots:
    """Numbered full-page PNGs of one test's steps: var/screenshots/<test>/01-<step>.png."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.taken: list[Path] = []

    def take(self, page: Page, step: str, *, hide: str | None = None) -> Path:
        """Save the page as it is now; `hide` is a CSS selector painted over (a secret shown)."""
        path = self.directory / f"{len(self.taken) + 1:02d}-{step}.png"
        mask = [page.locator(hide)] if hide else []
        page.screenshot(path=str(path), full_page=True, mask=mask, mask_color="#79818a")
        self.taken.append(path)
        return path


def screenshot_directory(request: pytest.FixtureRequest) -> Path:
    name = re.sub(r"[^A-Za-z0-9_.-]+", "-", request.node.name.removeprefix("test_"))
    directory = screenshots_dir() / name
    directory.mkdir(parents=True, exist_ok=True)
    return directory


@pytest.fixture
def screenshots(request: pytest.FixtureRequest) -> Screenshots:
    directory = screenshot_directory(request)
    for old in directory.glob("*.png"):  # a rerun's steps replace the last run's
        old.unlink()
    return Screenshots(directory)

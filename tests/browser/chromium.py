"""Debian's Chromium driven by Playwright: the one place every browser test launches it.

Playwright's own browser download is offline here, so `executable_path` names the Debian
binary, with the flags that keep it from calling out of this closed network.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from playwright.sync_api import Browser, sync_playwright

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@contextmanager
def launched_chromium() -> Iterator[Browser]:
    """A running headless Chromium; fails the test with one sentence when it is not installed."""
    if not os.access(CHROMIUM, os.X_OK):
        pytest.fail(
            f"Chromium is not installed ({CHROMIUM} is missing): run `.ci/install-services` "
            "(as root) once, or `make test`, which runs it.",
            pytrace=False,
        )
    # Playwright's sync API keeps an event loop of its own running on this thread while it is
    # started. Django then takes every ORM call made here (the test's own, pytest-django's
    # flush) for one from async code; none is, so its check is turned off meanwhile.
    previous = os.environ.get("DJANGO_ALLOW_ASYNC_UNSAFE")
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
            try:
                yield browser
            finally:
                browser.close()
    finally:
        if previous is None:
            os.environ.pop("DJANGO_ALLOW_ASYNC_UNSAFE", None)
        else:
            os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = previous

"""Compliance staff in the browser: place a hold, start a case export, watch it reach done,
download it, read a statement.

The app (uvicorn) and a Celery worker are real: the form queues the export, the worker writes
the zip, the list's script refreshes the progress bar until the page shows the download link.
The downloaded zip is opened here and its files checked against its own manifest.
"""

from __future__ import annotations

import hashlib
import json
import zipfile

import pytest
from django.contrib.auth.models import Group, User
from playwright.sync_api import Page, expect

from accounts.models import FolderRole
from audit.erasure_models import ErasureRequesterKind
from audit.hold_models import LegalHold
from audit.services.erasure import Requester, execute_erasure_request, request_erasure
from tests.browser import steps
from tests.browser.conftest import Screenshots
from tests.celery_worker import Worker
from tests.factories import MailAccountFactory
from tests.mailbox.erasure_data import PERSON, message
from tests.mailbox.factories import mapped_folder
from tests.mailbox.factories import stored_email as store
from tests.mcp.servers import Server

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.dovecot, pytest.mark.slow]

PASSWORD = "compliance-officer-secret"
EXPORT_SECONDS_MS = 120_000  # queued, picked up by the worker and written, on a busy machine


def test_compliance_staff_export_a_case_download_it_and_open_an_erasure_statement(
    page: Page, app: Server, worker: Worker, settings, screenshots: Screenshots, tmp_path
):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.PBKDF2PasswordHasher"]  # the server's
    billing = mapped_folder(MailAccountFactory(account_id="billing"), "inbox", FolderRole.INBOX)
    held = [store(billing, message(role, n)) for n, role in enumerate(("From", "To", "Cc"))]
    store(billing, message("", 9))  # someone else's mail, not the person's
    erased_from = mapped_folder(MailAccountFactory(account_id="archive"), "inbox", FolderRole.INBOX)
    store(erased_from, message("To", 30, person="gone@example.org"))
    requester = Requester(name="officer", kind=ErasureRequesterKind.USER, person="officer")
    second = Requester(name="second-officer", kind=ErasureRequesterKind.USER, person="second-officer")
    erasure = request_erasure(["gone@example.org"], requester=requester)
    execute_erasure_request(erasure.request_id, ["gone@example.org"], requester=second)
    # The Compliance group alone opens every page below (audit migrations 0007, 0011, 0012).
    officer = User.objects.create_user("officer", password=PASSWORD, is_staff=True)
    officer.groups.add(Group.objects.get(name="Compliance"))

    steps.log_in(page, "officer", PASSWORD)
    # A hold on the account first: the case's mail can be neither erased nor deleted meanwhile.
    page.goto("/admin/audit/legalhold/add/")
    page.fill("#id_name", "Case 42 hold")
    page.fill("#id_reason", "Litigation expected")
    page.select_option("#id_scope", "account")
    page.select_option("#id_accounts", "billing")
    screenshots.take(page, "hold-form")
    page.click("input[name=_save]")
    expect(page.locator("body")).to_contain_text("Case 42 hold")
    assert LegalHold.objects.active().filter(name="Case 42 hold", account_ids=["billing"]).exists()
    screenshots.take(page, "hold-placed")

    page.goto("/admin/audit/caseexport/add/")
    page.fill("#id_case_reference", "case 42")
    page.check("input[name=accounts][value=billing]")
    page.fill("#id_addresses", PERSON)
    screenshots.take(page, "start-form")
    page.click("#case-export-start")

    badge = page.locator(".case-export-status").first
    expect(page.locator("progress.case-export-progress").first).to_be_visible()
    screenshots.take(page, "progress")
    # The list's script polls the status JSON and reloads once the state changes.
    expect(badge).to_have_attribute("data-status", "done", timeout=EXPORT_SECONDS_MS)
    expect(page.locator("progress.case-export-progress").first).to_have_attribute("value", "100")
    expect(page.locator(".case-export-count").first).to_have_text("3 / 3")
    screenshots.take(page, "done")

    with page.expect_download() as started:
        page.click("a.case-export-download")
    saved = tmp_path / "export.zip"
    started.value.save_as(saved)
    assert started.value.suggested_filename.startswith("case-export-")
    with zipfile.ZipFile(saved) as archive:
        manifest = json.loads(archive.read("manifest.json"))
        assert manifest["case_reference"] == "case 42" and manifest["created_by"] == "officer"
        assert {m["stored_email_id"] for m in manifest["messages"]} == {str(e.pk) for e in held}
        for line in archive.read("manifest.sha256").decode().splitlines():
            digest, name = line.split("  ", 1)
            assert hashlib.sha256(archive.read(name)).hexdigest() == digest

    page.goto(f"/compliance/erasures/{erasure.request_id}/statement/")
    expect(page.locator("body")).to_contain_text("archive")
    expect(page.locator("body")).not_to_contain_text("gone@example.org")
    screenshots.take(page, "erasure-statement")

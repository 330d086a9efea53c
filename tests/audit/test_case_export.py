"""Case exports: the right mail, files whose hashes match the manifest, a bound, and compliance staff only."""

from __future__ import annotations

import hashlib
import io
import json
import zipfile
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from django.contrib.auth.models import Permission, User
from django.urls import reverse
from django.utils import timezone

from accounts.models import FolderRole, MailAccount
from audit import case_export_admin
from audit.case_export_models import CaseExport, CaseExportStatus
from audit.models import MutationEntry, MutationKind
from audit.services import case_export, chain
from audit.services.case_export import case_selection, run_case_export, start_case_export
from mailbox.archive import read_mbox
from mailbox.models import RawMessage, RepairRequest
from mailfathom.core.errors import MailFathomError
from tests.audit.support import compliance_officer
from tests.configure import configure
from tests.factories import MailAccountFactory
from tests.mailbox.erasure_data import PERSON, message
from tests.mailbox.factories import mapped_folder
from tests.mailbox.factories import stored_email as store

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def export_dir(settings, tmp_path) -> Path:
    directory = tmp_path / "case-exports"
    configure(settings, case_export_dir=str(directory))
    return directory


@pytest.fixture
def mail():
    """billing: the person in From, To and Cc, and one other email; support: one unrelated."""
    billing = mapped_folder(MailAccountFactory(account_id="billing"), "inbox", FolderRole.INBOX)
    support = mapped_folder(MailAccountFactory(account_id="support"), "inbox", FolderRole.INBOX)
    MailAccount.objects.filter(account_id="billing").update(mutation_audit_enabled=True)
    person = [store(billing, message(role, n)) for n, role in enumerate(("From", "To", "Cc"))]
    other = store(billing, message("", 9))
    elsewhere = store(support, message("", 20))
    return {"person": person, "other": other, "elsewhere": elsewhere}


def export(**selection) -> CaseExport:
    chosen = case_selection(**selection)
    record = start_case_export(chosen, requested_by="officer", case_reference="case 17")
    return run_case_export(record.id, chosen.addresses)


def opened(record: CaseExport, directory: Path) -> zipfile.ZipFile:
    assert record.status == CaseExportStatus.DONE, (record.status, record.failure_code)
    return zipfile.ZipFile(directory / record.file_name)


def manifest_of(archive: zipfile.ZipFile) -> dict:
    return json.loads(archive.read("manifest.json"))


def exported_ids(archive: zipfile.ZipFile) -> set[str]:
    return {m["stored_email_id"] for m in manifest_of(archive)["messages"] if m["status"] == "exported"}


def test_an_account_export_holds_its_mail_and_every_hash_in_the_manifest_matches(mail, export_dir):
    from accounts.models import MailAccount
    from audit.services.mutations import record_folder_reset

    # One chained entry before the export, so the manifest has a head to name.
    billing = MailAccount.objects.get(account_id="billing")
    MailAccount.objects.filter(pk=billing.pk).update(mutation_audit_enabled=True)
    record_folder_reset(billing.pk, "inbox", 0)
    record = export(account_ids=["billing"])

    archive = opened(record, export_dir)
    manifest = manifest_of(archive)
    expected = {str(e.pk) for e in [*mail["person"], mail["other"]]}
    assert exported_ids(archive) == expected
    assert manifest["selection"]["account_ids"] == ["billing"]
    assert manifest["created_by"] == "officer" and manifest["case_reference"] == "case 17"
    # The chains' heads as they stood: each names a link the live chain holds at that place.
    heads = manifest["chain_heads"]
    assert set(heads) == {"access", "answering", "erasure", "mutation"}
    for name, named in heads.items():
        if named["sequence"]:  # a trail with no link yet has no head to hold
            assert chain.link_at(name, named["sequence"])["chain_hash"] == named["hash"], name
    assert any(named["sequence"] for named in heads.values()), heads
    assert not [report for report in chain.verify_trails() if not report.ok]
    assert manifest["counts"] == {
        "selected": 4,
        "exported": 4,
        "missing": 0,
        "eml_bytes": sum(e.raw.original_size for e in [*mail["person"], mail["other"]]),
    }
    # Each EML file is the stored raw MIME, byte for byte, and hashes to its manifest line.
    for entry in manifest["messages"]:
        data = archive.read(entry["file"])
        assert hashlib.sha256(data).hexdigest() == entry["sha256"]
        assert entry["file"] == f"messages/{entry['n']:06d}-{entry['sha256'][:12]}.eml"
        assert len(data) == entry["size"]
        raw = RawMessage.objects.get(email_id=entry["stored_email_id"])
        assert entry["sha256"] == raw.sha256
    mbox = archive.read("messages.mbox")
    assert hashlib.sha256(mbox).hexdigest() == manifest["mbox"]["sha256"]
    # The detached sums check every file, as `sha256sum -c manifest.sha256` would.
    sums = archive.read("manifest.sha256").decode()
    lines = sums.splitlines()
    assert len(lines) == 4 + 2
    for line in lines:
        digest, name = line.split("  ", 1)
        assert hashlib.sha256(archive.read(name)).hexdigest() == digest
    message_lines = "".join(line + "\n" for line in lines if line.split("  ")[1].startswith("messages/"))
    assert hashlib.sha256(message_lines.encode()).hexdigest() == manifest["message_list_sha256"]
    assert hashlib.sha256(archive.read("manifest.json")).hexdigest() == record.manifest_sha256
    assert hashlib.sha256((export_dir / record.file_name).read_bytes()).hexdigest() == record.file_sha256


def test_the_mbox_reads_back_as_the_same_messages(mail, export_dir, tmp_path):
    record = export(account_ids=["billing"])
    archive = opened(record, export_dir)
    target = tmp_path / "read.mbox"
    target.write_bytes(archive.read("messages.mbox"))
    emls = [archive.read(m["file"]) for m in manifest_of(archive)["messages"]]

    assert [m.raw for m in read_mbox(target)] == emls


def test_a_from_line_in_a_body_is_quoted_mboxrd_style(export_dir):
    folder = mapped_folder(MailAccountFactory(account_id="quotes"), "inbox", FolderRole.INBOX)
    raw = message("From", 1).replace(b"Body 1", b"From here on\n>From there\nBody 1")
    store(folder, raw)
    record = export(account_ids=["quotes"])
    mbox = opened(record, export_dir).read("messages.mbox")

    assert b"\n>From here on\n>>From there\n" in mbox
    assert mbox.count(b"\nFrom ") == 0 and mbox.startswith(b"From MAILER-DAEMON ")


def test_a_person_export_holds_only_their_mail_and_the_record_keeps_no_address(mail, export_dir):
    record = export(addresses=[PERSON.upper()])

    archive = opened(record, export_dir)
    assert exported_ids(archive) == {str(e.pk) for e in mail["person"]}
    assert manifest_of(archive)["selection"]["addresses"] == [PERSON.casefold()]
    stored = json.dumps(CaseExport.objects.values().get(pk=record.pk), default=str).casefold()
    assert PERSON.casefold() not in stored and len(record.selection["address_hashes"][0]) == 64


def test_a_date_range_export_holds_only_mail_received_in_it(mail, export_dir):
    first, second, third = mail["person"]
    record = export(received_on_or_after=second.received_at, received_before=third.received_at)

    assert exported_ids(opened(record, export_dir)) == {str(second.pk)}


def test_the_person_addresses_must_be_those_it_was_started_with(mail, export_dir):
    chosen = case_selection(addresses=[PERSON])
    record = start_case_export(chosen, requested_by="officer")

    done = run_case_export(record.id, ["someone.else@example.org"])

    assert done.status == CaseExportStatus.FAILED and done.failure_code == 51002
    assert list(export_dir.iterdir()) == []


def test_a_damaged_stored_copy_is_listed_missing_with_its_reason(mail, export_dir):
    damaged = mail["person"][1]
    RawMessage.objects.filter(email=damaged).update(sha256="0" * 64)

    record = export(account_ids=["billing"])

    archive = opened(record, export_dir)
    entries = {m["stored_email_id"]: m for m in manifest_of(archive)["messages"]}
    assert entries[str(damaged.pk)]["status"] == "missing"
    assert "damaged" in entries[str(damaged.pk)]["reason"] and "file" not in entries[str(damaged.pk)]
    assert manifest_of(archive)["counts"]["missing"] == 1 and record.missing_messages == 1
    assert len([n for n in archive.namelist() if n.startswith("messages/")]) == 3
    assert RepairRequest.objects.filter(email=damaged).exists()


def test_over_the_size_bound_is_refused_with_58003_and_writes_no_file(mail, export_dir, settings):
    configure(settings, case_export_max_bytes=1024)

    with pytest.raises(MailFathomError) as caught:
        start_case_export(case_selection(account_ids=["billing"]), requested_by="officer")

    assert caught.value.code == 58003
    record = CaseExport.objects.get()
    assert record.status == CaseExportStatus.REFUSED and record.failure_code == 58003
    assert run_case_export(record.id).status == CaseExportStatus.REFUSED
    assert not export_dir.exists() or list(export_dir.iterdir()) == []


def test_a_selection_that_grows_past_the_bound_while_queued_is_refused_when_run(mail, export_dir, settings):
    chosen = case_selection(account_ids=["billing"])
    record = start_case_export(chosen, requested_by="officer")
    configure(settings, case_export_max_bytes=1024)

    done = run_case_export(record.id)

    assert (done.status, done.failure_code) == (CaseExportStatus.REFUSED, 58003)
    assert list(export_dir.iterdir()) == []


def test_an_empty_selection_and_an_unknown_account_are_refused_with_51002(mail):
    for selection in ({}, {"account_ids": ["nobody"]}, {"addresses": ["not an address"]}):
        with pytest.raises(MailFathomError) as caught:
            case_selection(**selection)
        assert caught.value.code == 51002
        assert "nobody" not in str(caught.value) and "not an address" not in str(caught.value)


def test_the_export_is_recorded_in_the_mutation_trail_of_accounts_whose_trail_is_on(mail, export_dir):
    record = export(received_on_or_after=datetime(2000, 1, 1, tzinfo=UTC))

    entries = list(MutationEntry.objects.filter(kind=MutationKind.CASE_EXPORTED))
    assert [(e.account_identifier, e.requester, e.counts["emails"]) for e in entries] == [
        ("billing", "officer", 4)
    ]  # support's trail is off: its one email is in the zip but not in a trail
    assert record.exported_messages == 5 and record.requested_by == "officer"


def test_expired_exports_lose_their_file_and_keep_their_record(mail, export_dir):
    record = export(account_ids=["billing"])
    path = export_dir / record.file_name

    assert case_export.expire_case_exports(now=record.expires_at) == 1

    record.refresh_from_db()
    assert not path.exists() and record.status == CaseExportStatus.EXPIRED and record.file_deleted_at


def test_exports_no_worker_is_writing_are_marked_failed_and_a_fresh_one_is_left(mail, export_dir):
    chosen = case_selection(account_ids=["billing"])
    stuck = start_case_export(chosen, requested_by="officer")
    fresh = start_case_export(chosen, requested_by="officer")
    later = stuck.requested_at + timedelta(seconds=case_export.ABANDONED_SECONDS + 1)
    running = CaseExportStatus.RUNNING
    CaseExport.objects.filter(pk=stuck.pk).update(status=running, progress_at=stuck.requested_at)
    CaseExport.objects.filter(pk=fresh.pk).update(status=running, progress_at=later)

    assert case_export.fail_abandoned_exports(now=later) == 1

    stuck.refresh_from_db()
    fresh.refresh_from_db()
    assert (stuck.status, stuck.failure_code) == (CaseExportStatus.FAILED, 54001)
    assert fresh.status == CaseExportStatus.RUNNING
    assert run_case_export(stuck.id).status == CaseExportStatus.FAILED  # a failed export stays failed


def test_a_running_export_whose_worker_went_silent_is_taken_over_and_a_live_one_is_not(mail, export_dir):
    chosen = case_selection(account_ids=["billing"])
    record = start_case_export(chosen, requested_by="officer")
    running = CaseExportStatus.RUNNING
    CaseExport.objects.filter(pk=record.pk).update(status=running, progress_at=timezone.now())

    assert run_case_export(record.id).status == CaseExportStatus.RUNNING  # its worker is still on it

    silent = timezone.now() - timedelta(seconds=case_export.STALE_SECONDS + 1)
    CaseExport.objects.filter(pk=record.pk).update(progress_at=silent)
    assert run_case_export(record.id).status == CaseExportStatus.DONE


def test_the_export_is_written_in_bounded_memory_through_a_partial_file(mail, export_dir, monkeypatch):
    seen = []
    real = case_export._copy_into

    def watching(archive, source, name):
        seen.append(sorted(p.name for p in export_dir.iterdir()))
        return real(archive, source, name)

    monkeypatch.setattr(case_export, "_copy_into", watching)
    record = export(account_ids=["billing"])

    assert all(any(n.endswith(".zip.partial") for n in names) for names in seen)
    assert sorted(p.name for p in export_dir.iterdir()) == [record.file_name]


# --- Admin: compliance staff only --------------------------------------------------------


def mail_operator() -> User:
    user = User.objects.create_user("operator", password="x", is_staff=True)
    user.user_permissions.add(
        *Permission.objects.filter(content_type__app_label__in=["accounts", "mailbox"]),
        *Permission.objects.filter(content_type__app_label="audit").exclude(codename="export_case"),
    )
    return user


@pytest.fixture
def run_at_once(monkeypatch):
    """The admin's queueing runs the task here, as a worker would once the record commits."""
    monkeypatch.setattr(
        case_export_admin, "queue_export", lambda record, addresses: run_case_export(record.id, addresses)
    )


def test_compliance_staff_start_follow_and_download_an_export_and_the_download_is_counted(
    client, mail, run_at_once
):
    from accounts.models import MailAccount
    from audit.models import AccessEntry

    MailAccount.objects.filter(account_id="billing").update(access_trail_enabled=True)
    client.force_login(compliance_officer())
    started = client.post(
        reverse("admin:audit_caseexport_add"),
        {"case_reference": "case 9", "accounts": ["billing"], "addresses": PERSON},
    )
    assert started.status_code == 302, started.content.decode()[:2000]
    record = CaseExport.objects.get()
    assert record.status == CaseExportStatus.DONE and record.exported_messages == 3

    listing = client.get(reverse("admin:audit_caseexport_changelist"))
    assert listing.status_code == 200 and b"case-export-progress" in listing.content
    assert reverse("admin:audit_caseexport_download", args=[record.id]).encode() in listing.content
    status = client.get(reverse("admin:audit_caseexport_status")).json()
    assert status["exports"][0] == {
        "id": str(record.id),
        "status": "done",
        "done": 3,
        "total": 3,
        "percent": 100,
        "failureCode": None,
    }
    download = client.get(reverse("admin:audit_caseexport_download", args=[record.id]))
    assert download.status_code == 200
    assert download["Content-Disposition"].startswith("attachment;")
    body = b"".join(download.streaming_content)
    assert hashlib.sha256(body).hexdigest() == record.file_sha256
    assert zipfile.ZipFile(io.BytesIO(body)).testzip() is None
    record.refresh_from_db()
    assert record.downloads == 1 and record.last_downloaded_by == "officer"
    # The download is in the access trail of the account it took mail from, naming who.
    (entry,) = AccessEntry.objects.filter(action="case export download")
    assert (entry.account_identifier, entry.requester, entry.channel) == ("billing", "officer", "admin")


def test_the_form_shows_58003_when_the_selection_is_too_large(client, mail, settings, run_at_once):
    configure(settings, case_export_max_bytes=1024)
    client.force_login(compliance_officer())

    page = client.post(reverse("admin:audit_caseexport_add"), {"accounts": ["billing"]})

    assert page.status_code == 200 and b"58003" in page.content
    assert CaseExport.objects.get().status == CaseExportStatus.REFUSED


def test_a_mail_operator_without_the_permission_can_neither_start_nor_list_nor_download(
    client, mail, run_at_once
):
    record = export(account_ids=["billing"])
    client.force_login(mail_operator())

    assert client.get(reverse("admin:audit_caseexport_add")).status_code == 403
    assert client.post(reverse("admin:audit_caseexport_add"), {"accounts": ["billing"]}).status_code == 403
    assert client.get(reverse("admin:audit_caseexport_changelist")).status_code == 403
    assert client.get(reverse("admin:audit_caseexport_status")).status_code == 403
    assert client.get(reverse("admin:audit_caseexport_download", args=[record.id])).status_code == 403
    assert CaseExport.objects.count() == 1
    record.refresh_from_db()
    assert record.downloads == 0

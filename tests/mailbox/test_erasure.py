"""Erasure of a person's mail: request bounds, matching, preview = execute = what went, reads
after erasure, suppression on import, and the erase_person command.

Messages are built here and stored through the real parse-and-store path; passages come
from the real embedding sweep against the scripted OpenAI-compatible server.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.utils import timezone

from accounts.models import FolderRole
from mailbox.models import (
    AttachmentText,
    Email,
    LexicalTermStat,
    RepairRequest,
    Suppression,
)
from mailbox.services import attachment_links, suppression
from mailbox.services.content import get_email_content
from mailbox.services.embedding import embed_pending
from mailbox.services.erasure import (
    ErasureRequest,
    erasure_request,
    execute_erasure,
    preview_erasure,
)
from mailbox.services.importer import import_archive
from mailbox.services.lexical_search import refresh_term_stats
from mailbox.services.search import search_emails
from mailbox.services.timeline import list_emails
from mailfathom.core.errors import MailFathomError
from tests.configure import configure, scripted_embeddings
from tests.factories import MailAccountFactory
from tests.mailbox.erasure_data import PERSON, TOKEN, message, row_counts
from tests.mailbox.factories import mapped_folder
from tests.mailbox.factories import stored_email as store
from tests.support import isolated_provider_health

pytestmark = [pytest.mark.django_db, pytest.mark.urls("tests.mailbox.download_urls")]

BASE_URL = "https://mail.example.org"


@pytest.fixture
def inbox():
    return mapped_folder(MailAccountFactory(account_id="billing"), "inbox", FolderRole.INBOX)


@pytest.fixture
def mailbox_with_person(inbox):
    """One email per header the person can be in (From, To, Cc, Bcc, Reply-To), one unrelated."""
    roles = ("From", "To", "Cc", "Bcc", "Reply-To")
    mine = [store(inbox, message(role, n, attachment=n == 0)) for n, role in enumerate(roles)]
    other = store(inbox, message("", 9))
    return mine, other


def request(*addresses: str, **bounds) -> ErasureRequest:
    return erasure_request(addresses or (PERSON,), **bounds)


# --- the request's bounds ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("addresses", "argument"),
    [
        ([f"p{n}@example.org" for n in range(101)], "addresses"),
        ([], "addresses"),
        (["x" * 310 + "@example.org"], "addresses"),
        (["not an address"], "addresses"),
        (["no-at-sign.example.org"], "addresses"),
        ("dana@example.org", "addresses"),
    ],
)
def test_unusable_addresses_are_refused_with_51002_naming_the_argument_not_the_value(addresses, argument):
    with pytest.raises(MailFathomError) as caught:
        erasure_request(addresses)
    assert caught.value.code == 51002 and caught.value.argument == argument
    assert "example.org" not in str(caught.value) and "not an address" not in str(caught.value)


def test_one_hundred_addresses_of_320_characters_are_accepted_and_case_folded():
    addresses = [f"{n:03d}" + "x" * 305 + "@Example.ORG" for n in range(100)]
    assert all(len(a) == 320 for a in addresses)
    assert erasure_request(addresses).addresses == tuple(a.casefold() for a in addresses)


def test_received_range_ending_before_it_starts_is_refused_with_51002():
    with pytest.raises(MailFathomError) as caught:
        request(
            received_on_or_after=datetime(2025, 2, 1, tzinfo=UTC),
            received_before=datetime(2025, 1, 1, tzinfo=UTC),
        )
    assert (caught.value.code, caught.value.argument) == (51002, "receivedBefore")


def test_unknown_account_is_refused_with_51002(inbox):
    with pytest.raises(MailFathomError) as caught:
        request(account_ids=["billing", "nobody"])
    assert (caught.value.code, caught.value.argument) == (51002, "accountIds")


# --- matching, preview and execution ----------------------------------------------------


def test_person_is_matched_in_from_to_cc_bcc_and_reply_to_in_any_case(mailbox_with_person):
    mine, other = mailbox_with_person

    preview = preview_erasure(request(PERSON.upper()))
    result = execute_erasure(request(PERSON.upper()))

    assert preview.total("emails") == result.total("emails") == 5
    assert not Email.objects.filter(pk__in=[e.pk for e in mine]).exists()
    assert Email.objects.filter(pk=other.pk).exists()


def test_preview_changes_nothing_and_equals_what_execute_removes(settings, scripted, mailbox_with_person):
    with isolated_provider_health(settings, "erasure"):
        configure(settings, **scripted_embeddings(scripted, embedding_max_retries=0))
        embed_pending()
    mine, _ = mailbox_with_person
    RepairRequest.objects.create(email=mine[1])
    # What extraction read from the person's attachment goes with the email, and is counted.
    extracted = f"Invoice for {TOKEN}"
    Email.objects.filter(pk=mine[0].pk).update(attachment_text=extracted)
    AttachmentText.objects.create(
        email=mine[0],
        part_index=2,
        outcome="ok",
        characters=len(extracted),
        extracted_at=timezone.now(),
        engine_version=1,
    )
    before = row_counts()
    assert before["Passage"] >= 6

    preview = preview_erasure(request())
    assert row_counts() == before  # a preview changes nothing
    result = execute_erasure(request())
    after = row_counts()

    gone = {name: before[name] - after[name] for name in before}
    for kind, name in (
        ("emails", "Email"),
        ("raw_messages", "RawMessage"),
        ("participants", "Participant"),
        ("passages", "Passage"),
        ("repair_requests", "RepairRequest"),
        ("attachment_texts", "AttachmentText"),
    ):
        assert preview.total(kind) == result.total(kind) == gone[name], kind
    assert gone["AttachmentText"] == 1
    assert preview.total("attachments") == result.total("attachments") == 1
    assert [c.account_id for c in result.accounts] == ["billing"]
    assert gone["Email"] == 5 and gone["Passage"] > 0 and gone["RepairRequest"] == 1


def test_account_and_received_range_narrow_the_erasure(inbox):
    elsewhere = mapped_folder(MailAccountFactory(account_id="sales"), "inbox", FolderRole.INBOX)
    early = store(inbox, message("From", 1))  # received 2 Jun 2025 (its Date header)
    late = store(inbox, message("From", 20))  # 21 Jun 2025
    other_account = store(elsewhere, message("From", 2))

    result = execute_erasure(
        request(account_ids=["billing"], received_on_or_after=datetime(2025, 6, 10, tzinfo=UTC))
    )

    assert [e.stored_email_id for e in result.erased] == [late.pk]
    assert Email.objects.filter(pk__in=[early.pk, other_account.pk]).count() == 2


def test_result_names_each_erased_email_by_plain_values_only(inbox):
    email = store(inbox, message("To", 3))
    message_id = email.message_id

    result = execute_erasure(request())

    (erased,) = result.erased
    assert (erased.account_id, erased.folder_alias, erased.uid) == ("billing", "inbox", email.uid)
    assert erased.message_id_hash == suppression.message_id_hash(message_id)
    assert len(erased.message_id_hash) == 64 and message_id not in repr(result)
    assert PERSON.casefold() not in repr(result).casefold() and TOKEN not in repr(result)
    assert Suppression.objects.filter(
        folder=inbox, uid=email.uid, message_id_hash=erased.message_id_hash
    ).exists()


def test_word_statistics_keep_no_word_only_erased_mail_held(mailbox_with_person):
    refresh_term_stats()
    assert LexicalTermStat.objects.filter(word=TOKEN).exists()

    execute_erasure(request())

    assert not LexicalTermStat.objects.filter(word=TOKEN).exists()
    assert LexicalTermStat.objects.filter(word="plain").exists()  # the unrelated mail's words stay


# --- reads after erasure ----------------------------------------------------------------


def test_erased_email_reads_as_53002_exactly_like_one_never_held(mailbox_with_person):
    mine, _ = mailbox_with_person
    never_held = get_email_content([str(uuid.uuid4())]).emails[0].failure

    execute_erasure(request())
    erased = get_email_content([str(mine[0].pk)]).emails[0]

    assert erased.content is None and erased.failure == never_held and never_held.code == 53002


def test_erased_email_is_absent_from_listing_and_search(mailbox_with_person):
    mine, other = mailbox_with_person
    refresh_term_stats()
    assert len(search_emails(TOKEN).matches) == 5

    execute_erasure(request())

    assert [s.stored_email_id for s in list_emails().emails] == [str(other.pk)]
    assert search_emails(TOKEN).matches == []


def test_attachment_link_of_an_erased_email_answers_like_an_unknown_token(client, mailfathom_settings, inbox):
    mailfathom_settings(public_base_url=BASE_URL)
    email = store(inbox, message("From", 4, attachment=True))
    (attachment,) = (
        get_email_content([str(email.pk)], include_attachment_download_links=True)
        .emails[0]
        .content.attachments
    )
    path = attachment.download_url[len(BASE_URL) :]
    assert client.get(path).status_code == 200
    unknown = client.get(attachment_links.PATH_PREFIX + "not-a-token")

    execute_erasure(request())
    response = client.get(path)

    assert (response.status_code, response.content) == (unknown.status_code, unknown.content)
    assert response["Cache-Control"] == unknown["Cache-Control"]


# --- suppression on import ----------------------------------------------------------------


def test_import_does_not_bring_an_erased_message_back_in_any_folder(tmp_path, inbox):
    archive = tmp_path / "mail"
    archive.mkdir()
    raw = message("From", 5)
    (archive / "one.eml").write_bytes(raw)
    (archive / "other.eml").write_bytes(message("", 6))
    mapped_folder(inbox.account, "archive", FolderRole.ARCHIVE)
    assert import_archive("billing", "inbox", archive).stored == 2
    execute_erasure(request())

    again = import_archive("billing", "inbox", archive)
    elsewhere = import_archive("billing", "archive", archive)

    assert (again.stored, again.suppressed, again.skipped) == (0, 1, 1)
    assert (elsewhere.stored, elsewhere.suppressed) == (1, 1)  # only the unrelated message
    assert not Email.objects.filter(sender_address__iexact=PERSON).exists()


def test_suppression_survives_a_rotation_of_the_key_ring(settings, tmp_path, inbox):
    (tmp_path / "one.eml").write_bytes(message("From", 7))
    import_archive("billing", "inbox", tmp_path)
    execute_erasure(request())
    settings.MAILFATHOM_KEYRING = (
        "bmV3ZXIta2V5LWZvci1yb3RhdGlvbi10ZXN0cy0wMDA=," + settings.MAILFATHOM_KEYRING
    )
    mapped_folder(inbox.account, "archive", FolderRole.ARCHIVE)

    result = import_archive("billing", "archive", tmp_path)

    assert (result.stored, result.suppressed) == (0, 1)


def test_a_new_message_from_an_erased_person_is_stored(inbox):
    store(inbox, message("From", 8))
    execute_erasure(request())

    fresh = store(inbox, message("From", 9))

    assert Email.objects.filter(pk=fresh.pk).exists()


# --- the erase_person command --------------------------------------------------------------


def run_command(*args: str) -> str:
    out = StringIO()
    call_command("erase_person", *args, stdout=out)
    return out.getvalue()


@pytest.fixture
def two_people(db):
    """alice requests, bob executes (erase_person --as)."""
    from tests.audit.support import person

    return person("alice", "request_erasure"), person("bob", "execute_erasure")


def recorded_id(output: str) -> str:
    return output.split("Erasure request ", 1)[1].split(" ", 1)[0]


def test_command_previews_by_default_and_prints_counts_only(mailbox_with_person, two_people):
    before = row_counts()

    output = run_command("--as", "alice", "--address", PERSON)

    assert row_counts() == before
    assert "account billing: 5 emails, 5 raw messages, 1 attachments" in output
    assert "Nothing was changed" in output
    assert PERSON.casefold() not in output.casefold() and TOKEN not in output


def test_command_executes_with_yes_as_another_user(mailbox_with_person, two_people):
    request_id = recorded_id(
        run_command("--as", "alice", "--address", PERSON, "--account", "billing", "--from", "2025-01-01")
    )

    output = run_command("--as", "bob", "--execute", request_id, "--address", PERSON, "--yes")

    assert "Erased:" in output and "5 suppressions recorded (every account)" in output
    assert Email.objects.count() == 1


def test_command_without_confirmation_changes_nothing(monkeypatch, mailbox_with_person, two_people):
    monkeypatch.setattr("builtins.input", lambda prompt: "no")
    request_id = recorded_id(run_command("--as", "alice", "--address", PERSON))
    before = row_counts()

    with pytest.raises(CommandError, match="Not confirmed"):
        run_command("--as", "bob", "--address", PERSON, "--execute", request_id)

    assert row_counts() == before


def test_command_refuses_an_unusable_address_without_echoing_it(mailbox_with_person, two_people):
    with pytest.raises(CommandError) as caught:
        run_command("--as", "alice", "--address", "secret value")
    assert "secret value" not in str(caught.value) and "addresses" in str(caught.value)

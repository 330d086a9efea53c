"""list_emails: page bounds, every filter, scope that never widens, cursors, freshness, projection."""

from __future__ import annotations

import uuid
from datetime import timedelta

import pytest

from accounts.models import FolderRole
from mailbox.models import Availability
from mailbox.services.selection import MailFilter
from mailbox.services.timeline import list_emails
from mailfathom.core import signing
from mailfathom.core.errors import MailFathomError
from tests.factories import FolderMappingFactory, MailAccountFactory
from tests.mailbox.factories import BASE_TIME, EmailFactory, mapped_folder

pytestmark = pytest.mark.django_db


def at(minutes: float):
    return BASE_TIME + timedelta(minutes=minutes)


@pytest.fixture
def billing():
    return MailAccountFactory(account_id="billing", display_name="Shared Billing")


@pytest.fixture
def inbox(billing):
    return mapped_folder(billing, "inbox", FolderRole.INBOX, last_committed_at=at(10_000))


@pytest.fixture
def spam(billing):
    return mapped_folder(billing, "spam", FolderRole.JUNK, last_committed_at=at(10_000))


@pytest.fixture
def hidden(billing):
    return mapped_folder(billing, "hr-private", visible_to_tools=False)


def _refusal(**kwargs) -> MailFathomError:
    with pytest.raises(MailFathomError) as caught:
        list_emails(**kwargs)
    return caught.value


def subjects(page) -> list[str]:
    return [summary.subject for summary in page.emails]


# --- page size ----------------------------------------------------------------------------


@pytest.mark.parametrize("size", [0, 101, -1, 10_000])
def test_page_size_outside_1_to_100_is_refused_with_51001(inbox, size):
    error = _refusal(page_size=size)
    assert error.code == 51001
    assert "100" in error.message


@pytest.mark.parametrize("size", [True, 2.0, "5"])
def test_page_size_that_is_no_whole_number_is_51001(inbox, size):
    assert _refusal(page_size=size).code == 51001


def test_page_size_is_checked_before_scope_or_any_query(django_assert_num_queries):
    with django_assert_num_queries(0), pytest.raises(MailFathomError) as caught:
        list_emails(accounts=["nobody-configured-this"], page_size=0)
    assert caught.value.code == 51001


def test_page_size_1_and_100_are_served(inbox):
    EmailFactory.create_batch(101, folder=inbox)
    assert len(list_emails(page_size=1).emails) == 1
    page = list_emails(page_size=100)
    assert len(page.emails) == 100
    assert page.next_cursor is not None


def test_page_size_defaults_to_25(inbox):
    EmailFactory.create_batch(30, folder=inbox)
    assert len(list_emails().emails) == 25


def test_last_page_has_no_next_cursor(inbox):
    EmailFactory.create_batch(3, folder=inbox)
    assert list_emails(page_size=3).next_cursor is None
    assert list_emails(page_size=2).next_cursor is not None


@pytest.mark.parametrize("direction", ["newest", "NewestFirst", "", None])
def test_unknown_direction_is_51002(inbox, direction):
    assert _refusal(direction=direction).code == 51002


def test_newest_first_is_the_default_and_oldest_first_reverses(inbox):
    for minute, subject in ((1, "old"), (2, "mid"), (3, "new")):
        EmailFactory(folder=inbox, subject=subject, received_at=at(minute))
    assert subjects(list_emails()) == ["new", "mid", "old"]
    assert subjects(list_emails(direction="oldestFirst")) == ["old", "mid", "new"]


# --- filters ------------------------------------------------------------------------------


def test_sender_filter_matches_whole_address_in_any_case_never_a_fragment(inbox):
    EmailFactory(folder=inbox, subject="alice", sender_address="alice@example.com")
    EmailFactory(folder=inbox, subject="malice", sender_address="malice@example.com")
    assert subjects(list_emails(mail_filter=MailFilter(sender_address="ALICE@Example.COM"))) == ["alice"]
    assert subjects(list_emails(mail_filter=MailFilter(sender_address="lice@example.com"))) == []
    assert _refusal(mail_filter=MailFilter(sender_address="alice")).code == 51002


def test_recipient_filter_matches_to_and_cc_but_not_bcc_or_reply_to(inbox):
    EmailFactory(folder=inbox, subject="to", to=["Pat@example.com"])
    EmailFactory(folder=inbox, subject="cc", cc=[("Pat", "pat@example.com")])
    EmailFactory(folder=inbox, subject="bcc", bcc=["pat@example.com"])
    EmailFactory(folder=inbox, subject="reply-to", reply_to=["pat@example.com"])
    EmailFactory(folder=inbox, subject="other", to=["patrick@example.com"])
    assert sorted(subjects(list_emails(mail_filter=MailFilter(recipient_address="PAT@example.com")))) == [
        "cc",
        "to",
    ]


def test_subject_fragment_is_case_insensitive(inbox):
    EmailFactory(folder=inbox, subject="Quarterly INVOICE attached")
    EmailFactory(folder=inbox, subject="Lunch")
    assert subjects(list_emails(mail_filter=MailFilter(subject_fragment="invoice"))) == [
        "Quarterly INVOICE attached"
    ]


def test_subject_fragment_wildcards_match_themselves(inbox):
    EmailFactory(folder=inbox, subject="save 50% today", received_at=at(1))
    EmailFactory(folder=inbox, subject="save 50 today", received_at=at(2))
    EmailFactory(folder=inbox, subject="file_name", received_at=at(3))
    EmailFactory(folder=inbox, subject="filexname", received_at=at(4))
    assert subjects(list_emails(mail_filter=MailFilter(subject_fragment="%"))) == ["save 50% today"]
    assert subjects(list_emails(mail_filter=MailFilter(subject_fragment="50%"))) == ["save 50% today"]
    assert subjects(list_emails(mail_filter=MailFilter(subject_fragment="file_name"))) == ["file_name"]
    assert subjects(list_emails(mail_filter=MailFilter(subject_fragment="_"))) == ["file_name"]


def test_subject_fragment_of_256_is_served_and_257_is_51002(inbox):
    EmailFactory(folder=inbox, subject="x" * 300)
    assert len(list_emails(mail_filter=MailFilter(subject_fragment="x" * 256)).emails) == 1
    error = _refusal(mail_filter=MailFilter(subject_fragment="x" * 257))
    assert error.code == 51002
    assert "256" in error.message
    assert "xxxx" not in error.message


def test_subject_fragment_with_control_character_is_51002(inbox):
    error = _refusal(mail_filter=MailFilter(subject_fragment="invoice\x07"))
    assert error.code == 51002
    assert "invoice" not in error.message


def test_received_range_includes_its_start_and_excludes_its_end(inbox):
    for minute in (0, 1, 2, 3):
        EmailFactory(folder=inbox, subject=f"m{minute}", received_at=at(minute))
    page = list_emails(
        direction="oldestFirst", mail_filter=MailFilter(received_on_or_after=at(1), received_before=at(3))
    )
    assert subjects(page) == ["m1", "m2"]


def test_received_range_ending_before_it_starts_is_51002(inbox):
    assert _refusal(mail_filter=MailFilter(received_on_or_after=at(2), received_before=at(1))).code == 51002


def test_seen_filter_selects_by_the_remote_seen_flag(inbox):
    EmailFactory(folder=inbox, subject="read", flags=["\\Seen", "\\Answered"])
    EmailFactory(folder=inbox, subject="unread", flags=["\\Flagged"])
    assert subjects(list_emails(mail_filter=MailFilter(is_remotely_seen=True))) == ["read"]
    assert subjects(list_emails(mail_filter=MailFilter(is_remotely_seen=False))) == ["unread"]


def test_attachment_filter_selects_with_and_without(inbox):
    EmailFactory(folder=inbox, subject="with", attachment_count=2, attachment_total_bytes=500)
    EmailFactory(folder=inbox, subject="inline only", attachment_count=0, inline_count=1)
    assert subjects(list_emails(mail_filter=MailFilter(has_attachments=True))) == ["with"]
    assert subjects(list_emails(mail_filter=MailFilter(has_attachments=False))) == ["inline only"]


# --- junk ---------------------------------------------------------------------------------


def test_junk_is_left_out_unless_asked_and_the_answer_says_which(inbox, spam):
    EmailFactory(folder=inbox, subject="ham", received_at=at(1))
    EmailFactory(folder=spam, subject="spam", received_at=at(2))
    default = list_emails()
    assert subjects(default) == ["ham"]
    assert default.included_junk_mail is False
    asked = list_emails(mail_filter=MailFilter(include_junk=True))
    assert subjects(asked) == ["spam", "ham"]
    assert asked.included_junk_mail is True
    assert asked.wire()["includedJunkMail"] is True


def test_naming_the_junk_folder_without_include_junk_mail_reads_nothing(inbox, spam):
    # Decision: a folder filter only narrows; include_junk_mail is the one switch for junk.
    EmailFactory(folder=spam, subject="spam")
    for folders in (["role:Junk"], ["SPAM"]):
        page = list_emails(folders=folders)
        assert page.emails == []
        assert page.folder_freshness == []
        assert page.included_junk_mail is False
        assert subjects(list_emails(folders=folders, mail_filter=MailFilter(include_junk=True))) == ["spam"]


def test_junk_role_on_an_account_without_one_is_53003(inbox):
    assert _refusal(folders=["role:Junk"], mail_filter=MailFilter(include_junk=True)).code == 53003


# --- scope --------------------------------------------------------------------------------


def test_unserved_account_is_never_read(inbox):
    former = MailAccountFactory(account_id="former", display_name="Former", served=False)
    EmailFactory(folder=mapped_folder(former, "inbox", FolderRole.INBOX), subject="former mail")
    EmailFactory(folder=inbox, subject="ours")
    assert subjects(list_emails(mail_filter=MailFilter(include_junk=True))) == ["ours"]
    assert _refusal(accounts=["former"]).code == 53001
    assert _refusal(accounts=["Former"]).code == 53001
    assert subjects(list_emails(mail_filter=MailFilter(sender_address="sender@example.com"))) == ["ours"]


def test_unknown_account_is_53001_not_an_empty_page(inbox):
    error = _refusal(accounts=["someone-else"])
    assert error.code == 53001


def test_folder_hidden_from_tools_is_never_read_nor_reported(inbox, hidden):
    EmailFactory(folder=hidden, subject="private")
    EmailFactory(folder=inbox, subject="ours")
    assert subjects(list_emails(mail_filter=MailFilter(include_junk=True))) == ["ours"]
    page = list_emails(folders=["hr-private"], mail_filter=MailFilter(include_junk=True))
    assert page.emails == []
    assert page.folder_freshness == []
    assert "hr-private" not in str(list_emails().wire())


def test_unmapped_folder_is_never_read(billing, inbox):
    orphan = mapped_folder(billing, "orphan")
    orphan.mapping.delete()  # the Folder row stays, its mapping is gone
    EmailFactory(folder=orphan, account=billing, subject="orphaned")
    assert subjects(list_emails(mail_filter=MailFilter(include_junk=True))) == []


def test_cursor_from_a_walk_with_junk_cannot_carry_junk_into_one_without(inbox, spam):
    EmailFactory.create_batch(3, folder=spam)
    EmailFactory.create_batch(3, folder=inbox)
    cursor = list_emails(page_size=1, mail_filter=MailFilter(include_junk=True)).next_cursor
    assert _refusal(cursor=cursor, page_size=1).code == 52002


# --- cursors ------------------------------------------------------------------------------


@pytest.fixture
def ten(inbox):
    return [EmailFactory(folder=inbox, subject=f"s{i}", received_at=at(i)) for i in range(10)]


def test_cursor_continues_where_the_page_ended(ten):
    first = list_emails(page_size=4)
    second = list_emails(page_size=4, cursor=first.next_cursor)
    assert subjects(first) == ["s9", "s8", "s7", "s6"]
    assert subjects(second) == ["s5", "s4", "s3", "s2"]


@pytest.mark.parametrize(
    "changed",
    [
        {"mail_filter": MailFilter(subject_fragment="s")},
        {"mail_filter": MailFilter(sender_address="sender@example.com")},
        {"mail_filter": MailFilter(received_before=at(100))},
        {"mail_filter": MailFilter(is_remotely_seen=False)},
        {"mail_filter": MailFilter(include_junk=True)},
        {"folders": ["inbox"]},
        {"folders": ["archive"]},
        {"direction": "oldestFirst"},
    ],
)
def test_cursor_reused_with_other_filters_or_direction_is_52002(billing, ten, spam, changed):
    mapped_folder(billing, "archive", FolderRole.ARCHIVE)
    cursor = list_emails(page_size=3).next_cursor
    error = _refusal(page_size=3, cursor=cursor, **changed)
    assert error.code == 52002
    assert cursor not in error.message


def test_cursor_for_another_account_set_is_52002(ten):
    support = MailAccountFactory(account_id="support", display_name="Support Desk")
    EmailFactory(folder=mapped_folder(support, "inbox", FolderRole.INBOX))
    cursor = list_emails(accounts=["billing"], page_size=3).next_cursor
    assert _refusal(accounts=["support"], page_size=3, cursor=cursor).code == 52002
    assert _refusal(page_size=3, cursor=cursor).code == 52002


def test_spellings_of_one_folder_set_keep_the_cursor_valid(ten):
    cursor = list_emails(folders=["INBOX"], page_size=3).next_cursor
    assert subjects(list_emails(folders=["role:Inbox"], page_size=3, cursor=cursor)) == ["s6", "s5", "s4"]
    assert subjects(list_emails(page_size=3, cursor=cursor)) == ["s6", "s5", "s4"]


def test_page_size_may_change_between_pages(ten):
    cursor = list_emails(page_size=3).next_cursor
    assert subjects(list_emails(page_size=5, cursor=cursor)) == ["s6", "s5", "s4", "s3", "s2"]


def test_both_spellings_of_an_account_give_cursors_valid_for_each_other(ten):
    by_id = list_emails(accounts=["billing"], page_size=3)
    by_name = list_emails(accounts=["shared BILLING"], page_size=3, cursor=by_id.next_cursor)
    assert subjects(by_name) == ["s6", "s5", "s4"]
    back = list_emails(accounts=["billing", "Shared Billing"], page_size=3, cursor=by_name.next_cursor)
    assert subjects(back) == ["s3", "s2", "s1"]


def _flip(text: str, index: int) -> str:
    replacement = "A" if text[index] != "A" else "B"
    return text[:index] + replacement + text[index + 1 :]


@pytest.mark.parametrize("index", [0, 10, 30, -10])
def test_tampered_cursor_is_52001(ten, index):
    cursor = list_emails(page_size=3).next_cursor
    tampered = _flip(cursor, index)
    error = _refusal(page_size=3, cursor=tampered)
    assert error.code == 52001
    assert tampered not in error.message


def test_truncated_and_hand_written_cursors_are_52001(ten):
    cursor = list_emails(page_size=3).next_cursor
    for text in (cursor[:-4], cursor.split(".")[0], "", "abc", "abc.def", "x" * 2001, cursor + "."):
        assert _refusal(page_size=3, cursor=text).code == 52001


def test_overlong_cursor_is_refused_before_it_is_decoded(ten, monkeypatch):
    def must_not_run(*args, **kwargs):
        raise AssertionError("decoded an over-long cursor")

    monkeypatch.setattr(signing, "verify", must_not_run)
    assert _refusal(cursor="a" * 2001).code == 52001


def test_cursor_from_another_key_ring_is_52001(ten, settings):
    cursor = list_emails(page_size=3).next_cursor
    settings.MAILFATHOM_KEYRING = "YW5vdGhlci1yaW5nLWVudGlyZWx5LWRpZmZlcmVudC0wMDE="
    assert _refusal(page_size=3, cursor=cursor).code == 52001


def test_cursor_survives_key_rotation_while_its_key_stays_on_the_ring(ten, settings):
    cursor = list_emails(page_size=3).next_cursor
    settings.MAILFATHOM_KEYRING = "bmV3LWtleS0wMDE=," + settings.MAILFATHOM_KEYRING
    assert subjects(list_emails(page_size=3, cursor=cursor)) == ["s6", "s5", "s4"]


def test_token_signed_for_another_purpose_is_52001(ten):
    cursor = list_emails(page_size=3).next_cursor
    payload = signing.verify("timeline-cursor", cursor)
    assert payload is not None
    assert _refusal(page_size=3, cursor=signing.sign("attachment-link", payload)).code == 52001


def test_signed_payload_of_the_wrong_shape_is_52001(ten):
    for payload in (b"not json", b"[]", b'{"v": 1}', b'{"v":1,"t":"x","i":"y","d":"newestFirst","f":"z"}'):
        assert _refusal(cursor=signing.sign("timeline-cursor", payload)).code == 52001


@pytest.mark.parametrize("direction", ["newestFirst", "oldestFirst"])
def test_walk_returns_every_email_once_in_order_while_mail_arrives(inbox, direction):
    # Three emails share each received time, so page boundaries fall inside ties.
    existing = [EmailFactory(folder=inbox, received_at=at(100 + i // 3)) for i in range(60)]
    expected = sorted(existing, key=lambda e: (e.received_at, e.pk), reverse=direction == "newestFirst")
    arrivals = 0
    returned = []
    cursor = None
    for _ in range(30):  # 60 emails at 7 a page plus arrivals end well before this
        page = list_emails(page_size=7, direction=direction, cursor=cursor)
        returned += [uuid.UUID(summary.stored_email_id) for summary in page.emails]
        if page.next_cursor is None:
            break
        # New mail lands between pages: newer than everything, older than everything, and
        # at exactly the received time the page ended on.
        last_time = page.emails[-1].received_at
        for received_at in (at(10_000 + arrivals), at(-1_000 - arrivals), last_time):
            EmailFactory(folder=inbox, received_at=received_at)
        arrivals += 1
        cursor = page.next_cursor
    else:
        pytest.fail("the walk did not reach its last page")
    existing_ids = {e.pk for e in existing}
    assert [i for i in returned if i in existing_ids] == [e.pk for e in expected]
    assert len(returned) == len(set(returned))
    assert arrivals >= 8


# --- freshness ----------------------------------------------------------------------------


def test_freshness_lists_each_folder_in_scope_including_never_synchronized(billing, inbox, spam, hidden):
    mapped_folder(billing, "archive", FolderRole.ARCHIVE)  # state row, never committed
    FolderMappingFactory(account=billing, alias="later")  # no state row at all yet
    support = MailAccountFactory(account_id="support", display_name="Support Desk")
    mapped_folder(support, "inbox", FolderRole.INBOX, last_committed_at=at(5))
    entries = [entry.wire() for entry in list_emails().folder_freshness]
    assert entries == [
        {"accountId": "billing", "alias": "archive", "lastCommittedAt": None, "wasSynchronized": False},
        {
            "accountId": "billing",
            "alias": "inbox",
            "lastCommittedAt": at(10_000).isoformat().replace("+00:00", "Z"),
            "wasSynchronized": True,
        },
        {"accountId": "billing", "alias": "later", "lastCommittedAt": None, "wasSynchronized": False},
        {
            "accountId": "support",
            "alias": "inbox",
            "lastCommittedAt": at(5).isoformat().replace("+00:00", "Z"),
            "wasSynchronized": True,
        },
    ]


def test_freshness_follows_the_folders_asked_for_and_the_junk_choice(billing, inbox, spam):
    page = list_emails(folders=["INBOX"])
    assert [(e.account_id, e.alias) for e in page.folder_freshness] == [("billing", "inbox")]
    with_junk = list_emails(mail_filter=MailFilter(include_junk=True))
    assert [e.alias for e in with_junk.folder_freshness] == ["inbox", "spam"]


# --- the summary projection ---------------------------------------------------------------


def test_summary_publishes_the_projection_and_nothing_more(inbox):
    email = EmailFactory(
        folder=inbox,
        message_id="<abc@example.com>",
        subject="Invoice 7",
        sender_address="alice@example.com",
        sender_name="Alice",
        to=[("Bob", "bob@example.com"), "carol@example.com"],
        cc=["dave@example.com"],
        reply_to=["eve@example.com"],
        body="secret body text",
        sent_at=at(1),
        received_at=at(2),
        size_bytes=4321,
        attachment_count=1,
        inline_count=2,
        attachment_total_bytes=999,
        encrypted=True,
        unverified_signature=True,
        unexpanded_tnef=True,
        flags=["\\Seen"],
        flags_observed=True,
        flags_observed_at=at(3),
        availability=Availability.EXCEEDED_SIZE_LIMIT,
    )
    (summary,) = list_emails().wire()["emails"]
    assert summary == {
        "storedEmailId": str(email.pk),
        "accountId": "billing",
        "accountDisplayName": "Shared Billing",
        "folderAlias": "inbox",
        "messageId": "<abc@example.com>",
        "subject": "Invoice 7",
        "senderAddress": "alice@example.com",
        "senderDisplayName": "Alice",
        "toAddresses": ["bob@example.com", "carol@example.com"],
        "sentAt": "2024-01-01T00:01:00Z",
        "receivedAt": "2024-01-01T00:02:00Z",
        "sizeBytes": 4321,
        "attachments": {
            "attachmentCount": 1,
            "inlineResourceCount": 2,
            "totalSizeBytes": 999,
            "encrypted": True,
            "unverifiedSignature": True,
            "unexpandedTnef": True,
        },
        "remoteFlags": {"flags": ["\\Seen"], "wasObserved": True, "observedAt": "2024-01-01T00:03:00Z"},
        "contentAvailability": "exceededSizeLimit",
    }


def test_envelope_only_email_reports_no_attachment_counts(inbox):
    EmailFactory(
        folder=inbox,
        attachment_count=None,
        inline_count=None,
        attachment_total_bytes=None,
        availability=Availability.AWAITING_STORAGE_HEADROOM,
    )
    (summary,) = list_emails().wire()["emails"]
    assert summary["attachments"]["attachmentCount"] is None
    assert summary["attachments"]["inlineResourceCount"] is None
    assert summary["attachments"]["totalSizeBytes"] is None
    assert summary["contentAvailability"] == "awaitingStorageHeadroom"
    assert summary["remoteFlags"] == {"flags": [], "wasObserved": False, "observedAt": None}


@pytest.mark.parametrize("availability", list(Availability))
def test_every_availability_travels_under_its_camel_case_name(inbox, availability):
    EmailFactory(folder=inbox, availability=availability)
    assert list_emails().wire()["emails"][0]["contentAvailability"] == availability.value


def test_to_addresses_exclude_cc_bcc_and_reply_to(inbox):
    EmailFactory(
        folder=inbox,
        to=["to@example.com"],
        cc=["cc@example.com"],
        bcc=["bcc@example.com"],
        reply_to=["reply@example.com"],
    )
    assert list_emails().emails[0].to_addresses == ["to@example.com"]


def test_listing_of_25_rows_uses_a_bounded_number_of_queries(billing, inbox, django_assert_max_num_queries):
    support = MailAccountFactory(account_id="support", display_name="Support Desk")
    folders = [inbox, mapped_folder(billing, "archive"), mapped_folder(support, "inbox")]
    for i in range(30):
        EmailFactory(folder=folders[i % 3], to=["a@example.com", "b@example.com"], cc=["c@example.com"])
    with django_assert_max_num_queries(8):
        page = list_emails()
    assert len(page.emails) == 25
    assert all(len(summary.to_addresses) == 2 for summary in page.emails)

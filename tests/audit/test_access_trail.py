"""The access trail's service: who read which mail, per account whose trail is on; its retention.

record_access is called by the MCP bridge, the admin email pages and the people pages (their
own tests drive those); here it is called directly, and the people page once end to end.
"""

from __future__ import annotations

import uuid
from datetime import timedelta

import pytest
from django.contrib.auth.models import Group, User
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from accounts.models import AccountMembership, FolderRole, MailAccount, MembershipRole
from accounts.services.caller import MCP_KEY, OAUTH_TOKEN, Caller, acting_as
from audit.access_models import AccessEntry, AccessEntryEmail
from audit.models import AnsweringRunEntry
from audit.services import retention
from audit.services.access_trail import record_access
from audit.services.answering_trail import RunAudit, RunOutcome, record_run
from tests.factories import MailAccountFactory
from tests.mailbox.factories import EmailFactory, mapped_folder

pytestmark = pytest.mark.django_db

KEY = Caller(MCP_KEY, "claude-desktop")
TOKEN = Caller(OAUTH_TOKEN, "Claude", owner="alice", client="Claude")


@pytest.fixture
def mail():
    on = MailAccountFactory(account_id="on", display_name="On", access_trail_enabled=True)
    off = MailAccountFactory(account_id="off", display_name="Off")
    also = MailAccountFactory(account_id="also", display_name="Also", access_trail_enabled=True)
    found, inboxes = {}, {}
    for account in (on, off, also):
        inbox = inboxes[account.account_id] = mapped_folder(account, "inbox", FolderRole.INBOX)
        found[account.account_id] = [str(EmailFactory(folder=inbox).pk) for _ in range(2)]
    return {"on": on, "off": off, "also": also, "emails": found, "inboxes": inboxes}


def test_one_entry_per_account_with_the_trail_on_holding_its_own_emails_in_the_order_returned(mail):
    emails = mail["emails"]
    returned = [emails["on"][1], emails["off"][0], emails["also"][0], emails["on"][0]]

    written = record_access("mcp", "search_emails", TOKEN, returned, [mail["off"].pk])

    assert written == 2
    entries = {entry.account_identifier: entry for entry in AccessEntry.objects.all()}
    assert set(entries) == {"on", "also"}
    on = entries["on"]
    assert [str(row.email_id) for row in on.emails.order_by("position")] == [emails["on"][1], emails["on"][0]]
    assert [str(row.email_id) for row in entries["also"].emails.all()] == [emails["also"][0]]
    assert (on.channel, on.action, on.requester_kind, on.requester, on.owner, on.client_name) == (
        "mcp",
        "search_emails",
        "oauth_token",
        "Claude",
        "alice",
        "Claude",
    )
    assert on.email_count == 2 and on.account == mail["on"] and on.retention_days == 90


def test_an_account_reached_without_mail_gets_an_entry_naming_none(mail):
    record_access("mcp", "list_accounts", KEY, [], [mail["on"].pk, mail["off"].pk])

    (entry,) = AccessEntry.objects.all()
    assert (entry.account_identifier, entry.email_count, entry.emails.count()) == ("on", 0, 0)
    assert (entry.requester_kind, entry.requester, entry.owner) == ("mcp_key", "claude-desktop", "")


def test_with_every_trail_off_nothing_is_recorded_and_it_costs_one_query(mail):
    MailAccount.objects.update(access_trail_enabled=False)

    with CaptureQueriesContext(connection) as queries:
        written = record_access("mcp", "get_email_content", KEY, mail["emails"]["on"], [mail["on"].pk])

    assert written == 0
    assert len(queries) == 1
    assert AccessEntry.objects.count() == 0


def test_repeats_and_values_that_are_not_ids_are_ignored_and_unknown_ids_left_out(mail):
    first = mail["emails"]["on"][0]
    record_access("admin", "email_list", KEY, [first, first, "not-an-id", str(uuid.uuid4())])

    (entry,) = AccessEntry.objects.all()
    assert [str(row.email_id) for row in entry.emails.all()] == [first]


def test_names_are_bounded_and_control_characters_dropped(mail):
    noisy = Caller(MCP_KEY, "key\x1b[31m" + "k" * 500, client="evil\nclient" + "c" * 500)

    record_access("mcp", "list_emails", noisy, [], [mail["on"].pk])

    entry = AccessEntry.objects.get()
    assert "\x1b" not in entry.requester and len(entry.requester) == 200
    assert "\n" not in entry.client_name and len(entry.client_name) == 100


def test_a_failing_append_never_raises(mail, monkeypatch):
    monkeypatch.setattr(AccessEntry.objects, "bulk_create", lambda *a, **k: 1 / 0)

    assert record_access("mcp", "list_emails", KEY, [], [mail["on"].pk]) == 0


def test_erasing_an_email_removes_it_from_the_entries_that_named_it_and_the_entry_stays(mail):
    first, second = mail["emails"]["on"]
    record_access("mcp", "get_email_content", KEY, [first, second])

    mail["on"].emails.filter(pk=first).delete()

    (entry,) = AccessEntry.objects.all()
    assert [str(row.email_id) for row in entry.emails.all()] == [second]
    assert entry.email_count == 2, "the count says what the read returned then"


def test_deleting_the_account_keeps_its_entries_by_identifier(mail):
    record_access("mcp", "list_accounts", KEY, [], [mail["on"].pk])

    mail["on"].delete()

    entry = AccessEntry.objects.get()
    assert (entry.account, entry.account_identifier) == (None, "on")
    assert AccessEntryEmail.objects.count() == 0


# --- retention ---------------------------------------------------------------------------


def _aged(account, days: int, count: int = 1) -> None:
    for n in range(count):
        record_access(
            "mcp", "list_accounts", KEY, [], [account.pk], at=timezone.now() - timedelta(days=days, seconds=n)
        )


def test_retention_erases_entries_past_the_accounts_window_and_keeps_the_rest(mail):
    MailAccount.objects.filter(pk=mail["on"].pk).update(access_trail_retention_days=10)
    _aged(mail["on"], 11, count=3)
    _aged(mail["on"], 9)
    _aged(mail["also"], 11)  # its window is 90 days

    result = retention.erase_expired_entries()

    assert result.access_erased == 3
    assert sorted(AccessEntry.objects.values_list("account_identifier", flat=True)) == ["also", "on"]


def test_retention_erases_at_most_a_batch_per_account_oldest_first(mail):
    MailAccount.objects.filter(pk=mail["on"].pk).update(access_trail_retention_days=1)
    _aged(mail["on"], 5, count=5)
    newest = AccessEntry.objects.order_by("-accessed_at").values_list("pk", flat=True)[:2]
    kept = set(newest)

    result = retention.erase_expired_entries(batch=3)

    assert result.access_erased == 3
    assert set(AccessEntry.objects.values_list("pk", flat=True)) == kept


def test_switching_the_trail_off_stops_new_entries_and_old_ones_still_leave(mail):
    MailAccount.objects.filter(pk=mail["on"].pk).update(access_trail_retention_days=1)
    _aged(mail["on"], 2)
    MailAccount.objects.filter(pk=mail["on"].pk).update(access_trail_enabled=False)

    assert record_access("mcp", "list_accounts", KEY, [], [mail["on"].pk]) == 0
    assert retention.erase_expired_entries().access_erased == 1
    assert AccessEntry.objects.count() == 0


def test_entries_of_a_deleted_account_leave_by_the_window_they_were_written_under(mail):
    MailAccount.objects.filter(pk=mail["on"].pk).update(access_trail_retention_days=3)
    _aged(mail["on"], 4)
    _aged(mail["on"], 2)
    MailAccount.objects.filter(pk=mail["on"].pk).delete()

    assert retention.erase_expired_entries().access_erased == 1
    assert AccessEntry.objects.count() == 1


# --- the answering trail names who asked --------------------------------------------------


def test_an_answering_entry_names_the_requester(mail):
    MailAccount.objects.filter(pk=mail["on"].pk).update(answering_audit_enabled=True)
    now = timezone.now()
    run = RunAudit(
        run_id=uuid.uuid4(),
        account_pks=[mail["on"].pk],
        emails=[],
        chat_alias="scripted",
        instruction_version="v",
        started_at=now,
        ended_at=now,
        outcome=RunOutcome.ANSWERED,
        requester=TOKEN,
    )

    assert record_run(run) == 1

    entry = AnsweringRunEntry.objects.get()
    assert (entry.requester_kind, entry.requester, entry.requester_owner, entry.client_name) == (
        "oauth_token",
        "Claude",
        "alice",
        "Claude",
    )


def test_a_caller_set_for_a_block_is_the_one_records_read():
    from accounts.services.caller import current_caller

    assert current_caller() is None
    with acting_as(KEY):
        assert current_caller() == KEY
    assert current_caller() is None


# --- the people page ----------------------------------------------------------------------


def test_a_people_page_search_leaves_an_entry_naming_the_person(client, mail):
    user = User.objects.create_user("pat", password="x")
    for account in (mail["on"], mail["off"]):
        AccountMembership.objects.create(account=account, user=user, role=MembershipRole.OWNER)
    client.force_login(user)
    EmailFactory(folder=mail["inboxes"]["on"], subject="Boiler invoice", body="boiler")
    from mailbox.services.lexical_search import refresh_term_stats

    refresh_term_stats()

    response = client.get("/people/search/", {"q": "boiler"})

    assert response.status_code == 200
    (entry,) = AccessEntry.objects.all()
    assert (entry.channel, entry.action, entry.requester_kind, entry.requester) == (
        "people_page",
        "search_emails",
        "person",
        "pat",
    )
    assert entry.account_identifier == "on" and entry.email_count == 1


def test_the_compliance_group_may_view_the_access_trail():
    group = Group.objects.get(name="Compliance")
    assert group.permissions.filter(codename="view_accessentry", content_type__app_label="audit").exists()


def test_the_switch_is_off_by_default_and_the_window_is_1_to_3650_days():
    from django.core.exceptions import ValidationError

    assert MailAccount._meta.get_field("access_trail_enabled").default is False
    assert MailAccount._meta.get_field("access_trail_retention_days").default == 90
    MailAccountFactory.build(access_trail_retention_days=3650).full_clean()
    for days in (0, 3651):
        with pytest.raises(ValidationError):
            MailAccountFactory.build(access_trail_retention_days=days).full_clean()

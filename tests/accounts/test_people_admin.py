"""People in admin: each page shows a person the rows of their own accounts, and no other's.

Alice owns account one, Bob account two; Rita reviews account one, Dana is its delegate;
Olga is an operator (see_every_account), Root a superuser. Every person holds the same
model permissions, so what differs between them is their people rows alone.
"""

from __future__ import annotations

import uuid

import pytest
from django.contrib.auth.models import Group, Permission, User
from django.urls import reverse
from django.utils import timezone

from accounts.models import AccountMembership, MailAccount, MembershipRole
from answering.models import Draft, DraftStatus
from audit.models import AnsweringRunEntry
from mailbox.models import Email, Folder
from tests.answering.drafts_support import DraftFactory
from tests.factories import MailAccountFactory
from tests.mailbox.factories import EmailFactory, mapped_folder

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("own_provider_health")]

# What the desk's people hold (a "People" group would hold the same): they may look at
# accounts, read mail, see folders and review drafts. None may change an account.
PERSON_PERMISSIONS = [
    "view_mailaccount",
    "view_email",
    "view_mail_content",
    "view_folder",
    "view_draft",
    "change_draft",
    "view_referencedocument",
    "view_answeringrunentry",
]


class Desk:
    def __init__(self) -> None:
        self.one = MailAccountFactory(account_id="acct-one", display_name="Account One")
        self.two = MailAccountFactory(account_id="acct-two", display_name="Account Two")
        self.folder_one = mapped_folder(self.one, "inbox")
        self.folder_two = mapped_folder(self.two, "inbox")
        self.email_one = EmailFactory(folder=self.folder_one, subject="Invoice for account one")
        self.email_two = EmailFactory(folder=self.folder_two, subject="Invoice for account two")
        self.draft_one = DraftFactory(email=EmailFactory(folder=self.folder_one, subject="Question one"))
        self.draft_two = DraftFactory(email=EmailFactory(folder=self.folder_two, subject="Question two"))
        self.alice = person("alice", self.one, MembershipRole.OWNER)
        self.bob = person("bob", self.two, MembershipRole.OWNER)
        self.rita = person("rita", self.one, MembershipRole.REVIEWER)
        self.dana = person("dana", self.one, MembershipRole.DELEGATE)
        self.olga = person("olga", None, None)
        self.olga.user_permissions.add(Permission.objects.get(codename="see_every_account"))
        self.root = User.objects.create_superuser("root", password="pw")


def person(name: str, account: MailAccount | None, role: str | None) -> User:
    user = User.objects.create_user(name, password="pw", is_staff=True)
    user.user_permissions.add(*Permission.objects.filter(codename__in=PERSON_PERMISSIONS))
    if account is not None:
        AccountMembership.objects.create(account=account, user=user, role=role)
    return user


@pytest.fixture
def desk() -> Desk:
    return Desk()


def _listed(client, name: str) -> set:
    response = client.get(reverse(f"admin:{name}_changelist"))
    assert response.status_code == 200
    return {row.pk for row in response.context["cl"].result_list}


def _status_accounts(client, url_name: str = "system-status") -> set[str]:
    response = client.get(reverse(url_name))
    assert response.status_code == 200
    return {status.account_id for status in response.context["status"].accounts}


def _change(name: str, pk) -> str:
    return reverse(f"admin:{name}_change", args=[pk])


def _synchronize(account: MailAccount) -> str:
    return reverse("admin:accounts_mailaccount_synchronize", args=[account.pk])


# --- owners: each sees their own account only -----------------------------------------


@pytest.mark.parametrize("who", ["alice", "bob"])
def test_each_owner_lists_only_their_own_accounts_rows(client, desk, who):
    mine, other = (desk.one, desk.two) if who == "alice" else (desk.two, desk.one)
    client.force_login(getattr(desk, who))

    assert _listed(client, "accounts_mailaccount") == {mine.pk}
    assert {Email.objects.get(pk=pk).account_id for pk in _listed(client, "mailbox_email")} == {mine.pk}
    assert {Folder.objects.get(pk=pk).account_id for pk in _listed(client, "mailbox_folder")} == {mine.pk}
    assert {Draft.objects.get(pk=pk).account_id for pk in _listed(client, "answering_draft")} == {mine.pk}
    assert _status_accounts(client) == {mine.account_id}
    assert _status_accounts(client, "system-status-live") == {mine.account_id}
    # Nor is the other account named anywhere on the pages: filters, status, drafting rows.
    for page in ("admin:mailbox_email_changelist", "admin:answering_draft_changelist", "system-status"):
        assert other.display_name not in client.get(reverse(page)).content.decode(), page


def test_alice_opening_bobs_rows_by_url_gets_404_as_for_rows_that_do_not_exist(client, desk):
    client.force_login(desk.alice)

    for url in [
        _change("mailbox_email", desk.email_two.pk),
        _change("mailbox_email", uuid.uuid4()),  # none such: the same answer
        _change("answering_draft", desk.draft_two.pk),
        _change("answering_draft", uuid.uuid4()),
        _change("mailbox_folder", desk.folder_two.pk),
        _change("accounts_mailaccount", desk.two.pk),
        reverse("admin:accounts_mailaccount_history", args=[desk.two.pk]),
        reverse("admin:accounts_mailaccount_test_connection", args=[desk.two.pk]),
    ]:
        assert client.get(url).status_code == 404, url
    assert client.post(_synchronize(desk.two)).status_code == 404
    assert client.post(_change("answering_draft", desk.draft_two.pk), {"_discard": "1"}).status_code == 404
    assert Draft.objects.get(pk=desk.draft_two.pk).status == DraftStatus.PENDING

    # Her own rows open; changing her account still takes the change permission (403, not 404).
    assert client.get(_change("mailbox_email", desk.email_one.pk)).status_code == 200
    assert client.get(_change("mailbox_folder", desk.folder_one.pk)).status_code == 200
    assert client.get(_change("accounts_mailaccount", desk.one.pk)).status_code == 200
    assert client.post(_synchronize(desk.one)).status_code == 403


def test_actions_reach_only_the_persons_own_rows(client, desk):
    """A forged selection of another account's draft is dropped: the action sees their queryset only."""
    client.force_login(desk.alice)

    def deliver_again(draft: Draft) -> str:
        response = client.post(
            reverse("admin:answering_draft_changelist"),
            {"action": "deliver_again", "_selected_action": [str(draft.pk)]},
            follow=True,
        )
        assert response.status_code == 200
        return response.content.decode()

    assert "1 draft checked in the Drafts folder." in deliver_again(desk.draft_one)
    assert "checked in the Drafts folder" not in deliver_again(desk.draft_two)


# --- roles ------------------------------------------------------------------------------


def test_a_reviewer_sees_and_reviews_drafts_but_not_emails_and_cannot_approve(client, desk):
    client.force_login(desk.rita)

    assert _listed(client, "mailbox_email") == set()
    assert client.get(_change("mailbox_email", desk.email_one.pk)).status_code == 404
    assert _listed(client, "answering_draft") == {desk.draft_one.pk}
    assert _listed(client, "mailbox_folder") == {desk.folder_one.pk}
    assert _status_accounts(client) == {"acct-one"}

    page = client.get(_change("answering_draft", desk.draft_one.pk))
    assert page.status_code == 200
    assert 'id="approve"' not in page.content.decode()
    assert 'id="save-and-approve"' not in page.content.decode()
    assert 'id="save"' in page.content.decode()
    assert client.post(_change("answering_draft", desk.draft_one.pk), {"_approve": "1"}).status_code == 403
    assert Draft.objects.get(pk=desk.draft_one.pk).status == DraftStatus.PENDING


def test_a_delegate_reads_mail_and_reviews_but_only_the_owner_approves(client, desk):
    client.force_login(desk.dana)
    assert _listed(client, "mailbox_email") == {desk.email_one.pk, desk.draft_one.email_id}
    assert client.get(_change("mailbox_email", desk.email_one.pk)).status_code == 200
    page = client.get(_change("answering_draft", desk.draft_one.pk)).content.decode()
    assert 'id="approve"' not in page
    refused = client.post(
        _change("answering_draft", desk.draft_one.pk), {"_save_and_approve": "1", "body": "Edited."}
    )
    assert refused.status_code == 403
    assert Draft.objects.get(pk=desk.draft_one.pk).status == DraftStatus.PENDING

    client.force_login(desk.alice)
    assert 'id="approve"' in client.get(_change("answering_draft", desk.draft_one.pk)).content.decode()
    approved = client.post(_change("answering_draft", desk.draft_one.pk), {"_approve": "1"})
    assert approved.status_code == 302
    draft = Draft.objects.get(pk=desk.draft_one.pk)
    assert (draft.status, draft.reviewed_by) == (DraftStatus.APPROVED, desk.alice)


@pytest.mark.parametrize("who", ["olga", "root"])
def test_operators_and_superusers_see_every_account(client, desk, who):
    client.force_login(getattr(desk, who))

    assert _listed(client, "accounts_mailaccount") == {desk.one.pk, desk.two.pk}
    assert {desk.email_one.pk, desk.email_two.pk} <= _listed(client, "mailbox_email")
    assert _listed(client, "answering_draft") == {desk.draft_one.pk, desk.draft_two.pk}
    assert _status_accounts(client) == {"acct-one", "acct-two"}
    assert client.get(_change("mailbox_email", desk.email_two.pk)).status_code == 200
    assert 'id="approve"' in client.get(_change("answering_draft", desk.draft_two.pk)).content.decode()


# --- memberships change ------------------------------------------------------------------


def test_removing_a_membership_takes_effect_on_the_next_request(client, desk):
    client.force_login(desk.alice)
    assert client.get(_change("mailbox_email", desk.email_one.pk)).status_code == 200

    AccountMembership.objects.filter(user=desk.alice).delete()

    assert client.get(_change("mailbox_email", desk.email_one.pk)).status_code == 404
    assert _listed(client, "mailbox_email") == set()
    assert _listed(client, "accounts_mailaccount") == set()
    assert _status_accounts(client) == set()


def test_a_group_membership_gives_every_member_the_account(client, desk):
    desks = Group.objects.create(name="account two desk")
    AccountMembership.objects.create(account=desk.two, group=desks, role=MembershipRole.DELEGATE)
    carol = person("carol", None, None)
    carol.groups.add(desks)
    client.force_login(carol)

    assert {Email.objects.get(pk=pk).account_id for pk in _listed(client, "mailbox_email")} == {desk.two.pk}
    assert client.get(_change("mailbox_email", desk.email_two.pk)).status_code == 200
    assert client.get(_change("mailbox_email", desk.email_one.pk)).status_code == 404
    assert _status_accounts(client) == {"acct-two"}
    # A delegate through the group: reviews, does not approve.
    assert 'id="approve"' not in client.get(_change("answering_draft", desk.draft_two.pk)).content.decode()


# --- the audit trail ---------------------------------------------------------------------


def test_a_non_operator_with_the_trails_permission_sees_only_their_accounts_entries(client, desk):
    now = timezone.now()
    entries = {
        account.pk: AnsweringRunEntry.objects.create(
            run_id=uuid.uuid4(),
            account=account,
            chat_alias="chat",
            instruction_version="v1",
            started_at=now,
            ended_at=now,
            outcome="answered",
        )
        for account in (desk.one, desk.two)
    }
    client.force_login(desk.alice)

    assert _listed(client, "audit_answeringrunentry") == {entries[desk.one.pk].pk}
    assert client.get(_change("audit_answeringrunentry", entries[desk.two.pk].pk)).status_code == 404

    client.force_login(desk.olga)
    assert _listed(client, "audit_answeringrunentry") == {entry.pk for entry in entries.values()}

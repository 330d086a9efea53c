"""The Compliance group opens what its work needs in admin, for every account, and nothing more.

Its members are staff with no membership of any mail account: the trails' pages must still
list every account's entries, the erasure requests and their printable statement must open,
and the mail operator's pages (accounts, emails) must stay closed.
"""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.urls import reverse

from audit.models import MutationEntry
from audit.services.erasure import execute_erasure_request, request_erasure
from tests.audit.support import OFFICER, REVIEWER, SECOND_ADDRESS, compliance_officer
from tests.mailbox.erasure_data import PERSON

pytestmark = pytest.mark.django_db


@pytest.fixture
def officer(client):
    client.force_login(compliance_officer())
    return client


@pytest.fixture
def erased(two_accounts):
    requested = request_erasure([PERSON, SECOND_ADDRESS], requester=OFFICER)
    execute_erasure_request(requested.request_id, [PERSON, SECOND_ADDRESS], requester=REVIEWER)
    return requested.request_id


def test_the_group_opens_the_trails_the_requests_and_the_statement(officer, erased):
    assert MutationEntry.objects.count() >= 2  # both accounts recorded the erasure
    for name in ("answeringrunentry", "mutationentry", "erasurerequestrecord"):
        assert officer.get(reverse(f"admin:audit_{name}_changelist")).status_code == 200, name
    assert officer.get(reverse("admin:audit_erasurerequestrecord_change", args=[erased])).status_code == 200
    statement = officer.get(reverse("audit:erasure-statement", args=[erased]))
    assert statement.status_code == 200


def test_the_trail_pages_list_every_accounts_entries_without_a_membership(officer, erased):
    page = officer.get(reverse("admin:audit_mutationentry_changelist")).content.decode()
    for entry in MutationEntry.objects.all():
        assert reverse("admin:audit_mutationentry_change", args=[entry.pk]) in page


def test_the_group_does_not_open_the_mail_operators_pages(officer, erased):
    assert officer.get(reverse("admin:accounts_mailaccount_changelist")).status_code == 403
    assert officer.get(reverse("admin:mailbox_email_changelist")).status_code == 403


def test_staff_without_the_group_see_no_trail_of_accounts_they_do_not_hold(client, erased):
    client.force_login(User.objects.create_user("clerk", password="not-used", is_staff=True))
    assert client.get(reverse("admin:audit_mutationentry_changelist")).status_code == 403

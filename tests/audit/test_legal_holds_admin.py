"""Legal holds in admin: only compliance staff place and release them; a held account is not deleted."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group, Permission
from django.contrib.messages import get_messages
from django.urls import reverse

from accounts.models import MailAccount
from audit.hold_models import HoldRequesterKind, HoldScope, LegalHold
from audit.services import holds
from mailbox.models import Email
from tests.audit.support import compliance_officer
from tests.factories import MailAccountFactory
from tests.mailbox.factories import EmailFactory

pytestmark = pytest.mark.django_db

OFFICER = holds.Requester(name="hold-officer", kind=HoldRequesterKind.USER)
ADD_URL = "admin:audit_legalhold_add"


@pytest.fixture
def held_account() -> tuple[MailAccount, LegalHold]:
    account = MailAccountFactory(account_id="billing")
    EmailFactory.create_batch(3, account=account)
    hold = holds.place_hold(
        name="Acme v. Billing",
        reason="Court order.",
        scope=HoldScope.ACCOUNT,
        account_ids=["billing"],
        requester=OFFICER,
    )
    return account, hold


@pytest.fixture
def operator(client):
    """A mail operator: staff with every account permission and the audit views, but not holds."""
    user = get_user_model().objects.create_user(username="operator", password="x", is_staff=True)
    user.user_permissions.add(
        *Permission.objects.filter(content_type__app_label="accounts"),
        *Permission.objects.filter(content_type__app_label="audit", codename__startswith="view_"),
    )
    client.force_login(user)
    return client


@pytest.fixture
def compliance(client):
    client.force_login(compliance_officer())
    return client


def shown(response) -> list[str]:
    return [str(message) for message in get_messages(response.wsgi_request)]


def test_deleting_a_held_account_in_admin_is_refused_with_58001_and_nothing_is_deleted(
    admin_client, held_account
):
    account, hold = held_account
    url = reverse("admin:accounts_mailaccount_delete", args=[account.pk])

    page = admin_client.get(url)
    posted = admin_client.post(url, {"post": "yes"})

    for response in (page, posted):
        assert response.status_code == 302
        assert response.url == reverse("admin:accounts_mailaccount_change", args=[account.pk])
        message = shown(response)[-1]
        assert "58001" in message and "Acme v. Billing" in message and str(hold.id) in message
    assert MailAccount.objects.filter(pk=account.pk).exists()
    assert Email.objects.filter(account=account).count() == 3


def test_delete_selected_refuses_when_any_selected_account_is_held(admin_client, held_account):
    account, _ = held_account
    free = MailAccountFactory(account_id="free")
    data = {"action": "delete_selected", "_selected_action": [account.pk, free.pk], "post": "yes"}

    response = admin_client.post(reverse("admin:accounts_mailaccount_changelist"), data)

    assert any("58001" in message for message in shown(response))
    assert MailAccount.objects.filter(pk__in=[account.pk, free.pk]).count() == 2
    assert Email.objects.filter(account=account).count() == 3


def test_a_held_account_that_admin_would_delete_is_kept_until_the_hold_is_released(admin_client):
    # No stored mail: Django's own rules let admin delete this account, so only the hold stops it.
    account = MailAccountFactory(account_id="empty")
    hold = holds.place_hold(
        name="Matter 9",
        reason="Court order.",
        scope=HoldScope.ACCOUNT,
        account_ids=["empty"],
        requester=OFFICER,
    )
    url = reverse("admin:accounts_mailaccount_delete", args=[account.pk])

    refused = admin_client.post(url, {"post": "yes"})

    assert any("58001" in message and "Matter 9" in message for message in shown(refused))
    assert MailAccount.objects.filter(pk=account.pk).exists()

    holds.release_hold(hold.id, reason="Matter closed.", requester=OFFICER)
    admin_client.post(url, {"post": "yes"})

    assert not MailAccount.objects.filter(pk=account.pk).exists()
    assert LegalHold.objects.get().released_by == "hold-officer"  # the record outlives the account


def test_a_mail_operator_without_the_permission_can_neither_place_nor_release(operator, held_account):
    _, hold = held_account
    form = {"name": "Sneaky", "reason": "x", "scope": "account", "accounts": ["billing"]}

    assert operator.get(reverse(ADD_URL)).status_code == 403
    assert operator.post(reverse(ADD_URL), form).status_code == 403
    release = reverse("admin:audit_legalhold_release", args=[hold.id])
    assert operator.post(release, {"reason": "Not mine to release.", "confirm": "on"}).status_code == 403
    assert LegalHold.objects.count() == 1 and LegalHold.objects.get().is_active


def test_the_compliance_group_places_a_hold_in_admin_with_addresses_kept_as_hashes(compliance):
    MailAccountFactory(account_id="sales")
    form = {
        "name": "Matter 17",
        "reason": "Preservation letter.",
        "scope": "case",
        "accounts": ["sales"],
        "addresses": "Dana.Subject@Example.ORG\nother@example.net\n",
        "received_on_or_after_0": "2025-02-01",
        "received_on_or_after_1": "00:00:00",
        "received_before_0": "",
        "received_before_1": "",
    }

    response = compliance.post(reverse(ADD_URL), form)

    assert response.status_code == 302, response.content.decode()[:2000]
    hold = LegalHold.objects.get()
    assert (hold.name, hold.scope, hold.account_ids) == ("Matter 17", "case", ["sales"])
    assert hold.created_by == "officer" and len(hold.address_hashes) == 2
    assert hold.received_on_or_after is not None and hold.received_before is None
    page = compliance.get(reverse("admin:audit_legalhold_change", args=[hold.id])).content.decode()
    assert "Matter 17" in page and "dana.subject" not in page.casefold()
    assert reverse("admin:audit_legalhold_release", args=[hold.id]) in page


def test_the_admin_form_refuses_a_hold_that_names_nothing(compliance):
    response = compliance.post(
        reverse(ADD_URL), {"name": "Empty", "reason": "x", "scope": "person", "addresses": ""}
    )

    assert response.status_code == 200
    assert "addresses" in response.content.decode() and not LegalHold.objects.exists()


def test_the_compliance_group_releases_a_hold_only_with_a_reason(compliance, held_account):
    _, hold = held_account
    release = reverse("admin:audit_legalhold_release", args=[hold.id])

    without = compliance.post(release, {"reason": "", "confirm": "on"})
    assert without.status_code == 200 and LegalHold.objects.get().is_active

    done = compliance.post(release, {"reason": "Matter settled.", "confirm": "on"})

    assert done.status_code == 302
    hold.refresh_from_db()
    assert not hold.is_active and hold.released_by == "officer" and hold.release_reason == "Matter settled."


def test_holds_are_never_edited_or_deleted_in_admin(admin_client, held_account):
    _, hold = held_account

    page = admin_client.get(reverse("admin:audit_legalhold_change", args=[hold.id])).content.decode()
    deleting = admin_client.post(reverse("admin:audit_legalhold_delete", args=[hold.id]), {"post": "yes"})

    assert 'name="_save"' not in page
    assert deleting.status_code == 403
    assert LegalHold.objects.filter(pk=hold.pk).exists()


def test_the_compliance_group_holds_the_permission_to_manage_holds():
    granted = set(Group.objects.get(name="Compliance").permissions.values_list("codename", flat=True))

    assert {"manage_legalhold", "view_legalhold"} <= granted

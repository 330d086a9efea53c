"""Suppression reaches every account of the deployment: the person's mail erased in one account is
not stored again when it arrives in another (import, or a synchronization batch through the store
path), unless the request asked for its own accounts only."""

from __future__ import annotations

import pytest

from accounts.models import FolderRole
from audit.erasure_models import ErasureRequesterKind
from audit.services.erasure import Requester, execute_erasure_request, request_erasure
from mailbox.models import Email, Suppression
from mailbox.services.erasure import erasure_request, execute_erasure
from mailbox.services.importer import import_archive
from mailbox.services.store import IncomingMessage, store_messages
from tests.factories import MailAccountFactory
from tests.mailbox.erasure_data import PERSON, message
from tests.mailbox.factories import mapped_folder
from tests.mailbox.factories import stored_email as store

pytestmark = pytest.mark.django_db

ALICE = Requester(name="alice", kind=ErasureRequesterKind.USER, person="alice")
BOB = Requester(name="bob", kind=ErasureRequesterKind.USER, person="bob")


@pytest.fixture
def accounts():
    """billing (where the erasure is made) and sales (where the same mail arrives later)."""
    billing = mapped_folder(MailAccountFactory(account_id="billing"), "inbox", FolderRole.INBOX)
    sales = mapped_folder(MailAccountFactory(account_id="sales"), "inbox", FolderRole.INBOX)
    return billing, sales


@pytest.fixture
def archive(tmp_path):
    """Two of the person's messages and one unrelated, as an archive to import."""
    folder = tmp_path / "mail"
    folder.mkdir()
    for n, role in enumerate(("From", "Cc")):
        (folder / f"person-{n}.eml").write_bytes(message(role, 40 + n))
    (folder / "other.eml").write_bytes(message("", 49))
    return folder


def erase_in_billing(**options) -> None:
    requested = request_erasure([PERSON], account_ids=["billing"], requester=ALICE, **options)
    execute_erasure_request(requested.request_id, [PERSON], requester=BOB)


def test_mail_erased_in_one_account_is_not_imported_into_another(accounts, archive):
    assert import_archive("billing", "inbox", archive).stored == 3
    erase_in_billing()
    assert Suppression.objects.filter(deployment_wide=True).count() == 2

    into_sales = import_archive("sales", "inbox", archive)

    assert (into_sales.stored, into_sales.suppressed) == (1, 2)  # only the unrelated message
    assert not Email.objects.filter(account__account_id="sales", sender_address__iexact=PERSON).exists()
    assert Email.objects.filter(account__account_id="sales").count() == 1


def test_mail_erased_in_one_account_is_not_stored_by_a_synchronization_batch_of_another(accounts):
    billing, sales = accounts
    raw = message("To", 50)
    store(billing, raw)
    erase_in_billing()

    # The store path a synchronization batch takes, under another account's UIDs.
    result = store_messages(
        sales, [IncomingMessage(uidvalidity=7, uid=1, size=len(raw), received_at=None, raw=raw)]
    )

    assert (len(result.email_ids), result.suppressed) == (0, 1)
    assert not Email.objects.filter(account=sales.account).exists()


def test_a_request_for_its_accounts_only_keeps_the_suppression_in_them(accounts, archive):
    import_archive("billing", "inbox", archive)
    erase_in_billing(accounts_only=True)
    assert Suppression.objects.filter(deployment_wide=False).count() == 2

    into_sales = import_archive("sales", "inbox", archive)
    into_billing_again = import_archive("billing", "inbox", archive)

    assert (into_sales.stored, into_sales.suppressed) == (3, 0)
    assert (into_billing_again.stored, into_billing_again.suppressed) == (0, 2)


def test_the_mailbox_use_case_suppresses_deployment_wide_by_default(accounts, archive):
    import_archive("billing", "inbox", archive)

    result = execute_erasure(erasure_request([PERSON]))

    assert result.deployment_wide is True and result.suppressions == 2
    assert len(result.suppression_ids) == 2
    assert set(Suppression.objects.values_list("deployment_wide", flat=True)) == {True}

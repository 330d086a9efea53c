"""The people pages: search and ask over the accounts a person may read, through the tools' use cases.

A person owns account "home" only; account "other" holds mail that matches every query
better. Pages are read with Django's test client; ask runs against the scripted
OpenAI-compatible server (tests/answering/fixtures.py).
"""

from __future__ import annotations

import html
import re
from datetime import UTC, datetime

import pytest
from django.contrib.auth.models import Group, Permission, User
from django.urls import reverse

from accounts.models import AccountMembership, FolderRole, MailAccount, MembershipRole
from accounts.services.scope import limited_to_accounts
from audit.models import AnsweringRunEntry
from mailbox.services.search import search_emails
from tests.answering.fixtures import chat_endpoint
from tests.audit.support import keep_answering_trail
from tests.configure import configure
from tests.factories import MailAccountFactory
from tests.mailbox.factories import EmailFactory, mapped_folder

pytestmark = pytest.mark.django_db

SEARCH = "/people/search/"
ASK = "/people/ask/"
PASSWORD = "people-search-pw"


def shown_ids(response) -> list[str]:
    return re.findall(r'data-email-id="([^"]+)"', response.content.decode())


def refusal(response, where: str = "people-search-refusal") -> tuple[int, str]:
    page = response.content.decode()
    found = re.search(rf'id="{where}" data-code="(\d+)">(.*?)</div>', page, re.DOTALL)
    assert found, "no refusal shown"
    text = html.unescape(re.sub(r"<[^>]+>", "", found.group(2)))
    return int(found.group(1)), re.sub(r"\s+", " ", text).strip()


QUERY_REFUSED = (
    "The queryText argument must be 1 to 512 characters, not blank, without control characters. "
    "Check the field “Search for”."
)


def person(username: str, *accounts: MailAccount, role: str = MembershipRole.OWNER, **fields) -> User:
    user = User.objects.create_user(username, password=PASSWORD, **fields)
    for account in accounts:
        AccountMembership.objects.create(account=account, user=user, role=role)
    return user


@pytest.fixture
def mail():
    """Two accounts. `other` holds the mail every query here matches best."""
    home = MailAccountFactory(account_id="home", display_name="Home")
    other = MailAccountFactory(account_id="other", display_name="Other")
    inbox = mapped_folder(home, "inbox", FolderRole.INBOX)
    other_inbox = mapped_folder(other, "inbox", FolderRole.INBOX)
    invoice = EmailFactory(
        folder=inbox,
        subject="Boiler service invoice",
        body="The boiler service is done; the invoice is attached.",
        sender_address="plumber@example.com",
        sender_name="Pat Plumber",
        to=["me@example.com"],
        attachment_count=1,
        flags=["\\Seen"],
        received_at=datetime(2024, 3, 1, 10, tzinfo=UTC),
    )
    warranty = EmailFactory(
        folder=inbox,
        subject="Boiler warranty",
        body="Your boiler warranty runs until 2030.",
        sender_address="maker@example.com",
        to=["partner@example.com"],
        received_at=datetime(2024, 3, 5, 10, tzinfo=UTC),
    )
    leak = EmailFactory(
        folder=other_inbox,
        subject="Boiler service invoice boiler boiler",
        body="boiler service invoice boiler service boiler invoice OTHER-4242",
        sender_address="plumber@example.com",
        attachment_count=1,
        received_at=datetime(2024, 3, 2, 10, tzinfo=UTC),
    )
    return {
        "home": home,
        "other": other,
        "invoice": str(invoice.pk),
        "warranty": str(warranty.pk),
        "leak": str(leak.pk),
    }


@pytest.fixture
def owner(client, mail) -> User:
    user = person("owner", mail["home"])
    client.force_login(user)
    return user


# --- scope --------------------------------------------------------------------------------


def test_a_person_finds_their_own_mail_and_never_another_accounts_even_when_it_matches_better(
    client, owner, mail
):
    with limited_to_accounts(None):
        everyone = [m.summary.stored_email_id for m in search_emails("boiler service invoice").matches]
    assert everyone[0] == mail["leak"], "the other account's mail is the better match"

    response = client.get(SEARCH, {"q": "boiler service invoice"})

    assert response.status_code == 200
    assert shown_ids(response)[0] == mail["invoice"]
    assert mail["leak"] not in shown_ids(response)
    page = response.content.decode()
    assert "OTHER-4242" not in page and "Other" not in page
    assert "Boiler service invoice" in page and "Pat Plumber &lt;plumber@example.com&gt;" in page
    assert "<mark>boiler</mark>" in page.lower()  # the extract, its matched words marked
    assert "2024-03-01" in page and "Home" in page


def test_naming_an_account_the_person_may_not_read_is_refused_as_an_unknown_one(client, owner, mail):
    response = client.get(SEARCH, {"q": "boiler", "accounts": ["other"]})

    assert refusal(response) == (
        53001,
        "Error 53001: Mail account 'other' is not accessible. Check the field “Accounts”.",
    )
    assert shown_ids(response) == []


def test_a_delegate_reads_as_an_owner_does_and_a_reviewer_reads_nothing(client, mail):
    client.force_login(person("delegate", mail["home"], role=MembershipRole.DELEGATE))
    assert mail["invoice"] in shown_ids(client.get(SEARCH, {"q": "boiler"}))
    client.force_login(person("reviewer", mail["home"], role=MembershipRole.REVIEWER))
    response = client.get(SEARCH, {"q": "boiler"})
    assert 'id="people-empty"' in response.content.decode() and shown_ids(response) == []


def test_a_group_membership_gives_its_members_the_account(client, mail):
    group = Group.objects.create(name="household")
    AccountMembership.objects.create(account=mail["home"], group=group, role=MembershipRole.OWNER)
    member = User.objects.create_user("member", password=PASSWORD)
    member.groups.add(group)
    client.force_login(member)
    assert set(shown_ids(client.get(SEARCH, {"q": "boiler"}))) == {mail["invoice"], mail["warranty"]}


def test_a_person_with_no_account_sees_a_clear_empty_state(client, mail):
    client.force_login(person("nobody"))

    response = client.get(SEARCH, {"q": "boiler"})

    page = response.content.decode()
    assert 'id="people-empty"' in page and "no mail accounts to search" in page
    assert shown_ids(response) == [] and 'id="people-search"' not in page


def test_an_operator_sees_every_served_account(client, mail):
    client.force_login(User.objects.create_superuser("root", "root@example.invalid", PASSWORD))
    assert {mail["invoice"], mail["leak"]} <= set(shown_ids(client.get(SEARCH, {"q": "boiler invoice"})))

    operator = person("operator", is_staff=True)
    operator.user_permissions.add(Permission.objects.get(codename="see_every_account"))
    client.force_login(operator)
    assert mail["leak"] in shown_ids(client.get(SEARCH, {"q": "boiler invoice"}))


# --- filters and bounds -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("narrowing", "expected"),
    [
        (
            {},
            (
                "invoice",
                "warranty",
            ),
        ),
        ({"sender": "PLUMBER@example.com"}, ("invoice",)),
        ({"recipient": "partner@example.com"}, ("warranty",)),
        ({"subject": "warranty"}, ("warranty",)),
        ({"after": "2024-03-02"}, ("warranty",)),
        ({"before": "2024-03-02"}, ("invoice",)),
        ({"after": "2024-03-01", "before": "2024-03-05"}, ("invoice",)),
        ({"attachments": "yes"}, ("invoice",)),
        ({"attachments": "no"}, ("warranty",)),
        ({"seen": "yes"}, ("invoice",)),
        ({"seen": "no"}, ("warranty",)),
        (
            {"accounts": ["home"]},
            (
                "invoice",
                "warranty",
            ),
        ),
    ],
    ids=repr,
)
def test_filters_narrow_the_results(client, owner, mail, narrowing, expected):
    response = client.get(SEARCH, {"q": "boiler", **narrowing})
    assert set(shown_ids(response)) == {mail[name] for name in expected}


def test_the_result_limit_bounds_the_window(client, owner, mail):
    shown = shown_ids(client.get(SEARCH, {"q": "boiler", "limit": "1"}))
    assert len(shown) == 1 and shown[0] in {mail["invoice"], mail["warranty"]}


@pytest.mark.parametrize(
    ("arguments", "code", "sentence"),
    [
        (
            {"limit": "0"},
            51003,
            "The resultLimit argument must be a whole number from 1 to 50. Check the field “Results”.",
        ),
        (
            {"limit": "51"},
            51003,
            "The resultLimit argument must be a whole number from 1 to 50. Check the field “Results”.",
        ),
        (
            {"limit": "many"},
            51003,
            "The resultLimit argument must be a whole number from 1 to 50. Check the field “Results”.",
        ),
        (
            {"after": "2024-03-05", "before": "2024-03-01"},
            51002,
            "The received range ends before it starts. Check the field “Received before”.",
        ),
        (
            {"after": "last week"},
            51002,
            "The receivedOnOrAfter argument must be an ISO 8601 date and time with a time zone, such as "
            "2024-05-01T09:30:00Z. Check the field “Received on or after”.",
        ),
        (
            {"sender": "plumber"},
            51002,
            "The senderAddress filter must be one whole email address. Check the field “From”.",
        ),
        (
            {"attachments": "maybe"},
            51002,
            "The hasAttachments argument must be true or false. Check the field “Attachments”.",
        ),
        (
            {"q": "   "},
            51002,
            QUERY_REFUSED,
        ),
        (
            {"q": "x" * 513},
            51002,
            QUERY_REFUSED,
        ),
    ],
    ids=repr,
)
def test_a_bad_argument_shows_the_use_cases_code_and_sentence(client, owner, mail, arguments, code, sentence):
    response = client.get(SEARCH, {"q": "boiler", **arguments})

    assert response.status_code == 200
    assert refusal(response) == (code, f"Error {code}: {sentence}")
    assert shown_ids(response) == []


def test_a_date_is_midnight_in_the_deployments_time_zone(client, owner, mail, settings):
    settings.TIME_ZONE = "Pacific/Auckland"  # 2024-03-02 00:00 there is 2024-03-01 11:00 UTC
    assert set(shown_ids(client.get(SEARCH, {"q": "boiler", "before": "2024-03-02"}))) == {mail["invoice"]}
    assert set(shown_ids(client.get(SEARCH, {"q": "boiler", "after": "2024-03-01"}))) == {
        mail["invoice"],
        mail["warranty"],
    }


# --- links --------------------------------------------------------------------------------


def test_a_result_links_to_the_admin_email_page_only_for_a_person_who_may_open_it(client, mail):
    page_of = reverse("admin:mailbox_email_change", args=[mail["invoice"]])
    client.force_login(person("plain", mail["home"]))
    assert page_of not in client.get(SEARCH, {"q": "boiler"}).content.decode()

    staff = person("staff", mail["home"], is_staff=True)
    staff.user_permissions.add(Permission.objects.get(codename="view_email"))
    client.force_login(staff)
    assert f'href="{page_of}"' in client.get(SEARCH, {"q": "boiler"}).content.decode()


# --- logging in ---------------------------------------------------------------------------


def test_an_anonymous_visitor_is_sent_to_the_login_form(client):
    response = client.get(SEARCH, {"q": "boiler"})
    assert response.status_code == 302
    assert response["Location"].startswith("/people/login/?next=/people/search/")
    assert client.post(ASK, {"question": "what?"})["Location"].startswith("/people/login/")


def test_a_person_who_is_not_staff_logs_in_on_the_people_login_form(client, mail):
    person("resident", mail["home"])
    assert client.get("/people/login/").status_code == 200

    refused = client.post("/people/login/", {"username": "resident", "password": "wrong"})
    assert "Please enter a correct username and password" in refused.content.decode()
    assert "staff" not in refused.content.decode()

    response = client.post(
        "/people/login/?next=/people/search/", {"username": "resident", "password": PASSWORD, "next": SEARCH}
    )
    assert response.status_code == 302 and response["Location"] == SEARCH
    assert mail["invoice"] in shown_ids(client.get(SEARCH, {"q": "boiler"}))


def test_an_inactive_person_cannot_log_in(client, mail):
    person("gone", mail["home"], is_active=False)
    response = client.post("/people/login/", {"username": "gone", "password": PASSWORD})
    assert response.status_code == 200 and "_auth_user_id" not in client.session


# --- ask ----------------------------------------------------------------------------------


def test_ask_is_not_offered_without_a_chat_endpoint_and_a_question_sent_anyway_is_refused(
    client, owner, mail, settings
):
    configure(settings, chat_provider="none")

    page = client.get(SEARCH).content.decode()
    assert 'id="people-ask-unavailable"' in page and 'id="people-ask"' not in page
    assert "does not answer questions about mail" in page

    code, sentence = refusal(
        client.post(ASK, {"question": "What did the plumber charge?"}), "people-ask-refusal"
    )
    assert code == 56001 and "does not answer questions about mail" in sentence


@pytest.mark.parametrize("chat_api", ["chat-completions"], indirect=True)
def test_ask_answers_over_the_persons_accounts_only(client, world, obedient, answering, chat_api):
    built = world()
    keep_answering_trail("work", "private")
    user = person("worker", MailAccount.objects.get(account_id="work"), is_staff=True)
    user.user_permissions.add(Permission.objects.get(codename="view_email"))
    client.force_login(user)
    assert 'id="people-ask"' in client.get(SEARCH).content.decode()

    response = client.post(ASK, {"question": "What did the insurer finally agree to pay?"})

    page = response.content.decode()
    assert 'id="people-answer"' in page and "The insurer agreed to pay 2,300 euros." in page
    read = re.findall(r'<li id="source-\d+">\s*<a href="/admin/mailbox/email/([^/]+)/change/"', page)
    assert read and set(read) <= set(built.work_ids)
    relied = re.search(r'<ol id="people-relied-on">(.*?)</ol>', page, re.DOTALL)
    assert relied and 'value="1"' in relied.group(1) and read[0] in relied.group(1)
    assert '<a href="#source-1">1</a>' in page  # the answer's [1] leads to its source
    for marker in ("PRIVATE-7731", "JUNK-5512", "HIDDEN-9046"):
        assert marker not in page
        for request in answering.recorded(chat_endpoint(chat_api)):
            assert marker not in str(request.body), "the model was shown mail outside the person's scope"
    # The run is in the answering trail, as a tool call's is: for the person's account only.
    (entry,) = AnsweringRunEntry.objects.all()
    assert entry.account.account_id == "work"
    assert {str(email_id) for email_id in entry.emails.values_list("email_id", flat=True)} == set(read)


@pytest.mark.parametrize("chat_api", ["chat-completions"], indirect=True)
def test_a_question_out_of_bounds_is_refused_with_its_code_and_nothing_is_sent(
    client, world, answering, chat_api
):
    world()
    client.force_login(person("worker", MailAccount.objects.get(account_id="work")))

    response = client.post(ASK, {"question": "x" * 1001})

    code, sentence = refusal(response, "people-ask-refusal")
    assert code == 51002 and "The question argument must be 1 to 1000 characters" in sentence
    assert "Check the field “Question”." in sentence
    assert answering.recorded(chat_endpoint(chat_api)) == []

"""Notifications a person chooses: what is sent, when, to whom, and that it carries no mail content.

Mail goes through Django's locmem backend (mail.outbox); webhooks to a real HTTP server on
loopback, started here in a thread. Drafts answer mail with recognizable subjects, senders
and bodies, so any of them reaching a message fails the test. Passes are run with `now`
given, so "the next pass" and "an interval later" are exact.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import threading
import uuid
from collections.abc import Iterator
from datetime import timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from django.contrib.auth.models import Group, Permission, User
from django.core import mail
from django.utils import timezone

from accounts import crypto
from accounts.models import (
    AccountMembership,
    AuthMethod,
    GrantState,
    MailAccount,
    MembershipRole,
    OAuthGrant,
    ProviderKind,
    Security,
)
from accounts.notification_models import NotificationPreference, NotificationSent, webhook_url_problem
from answering.models import Draft, DraftStatus, Intent, Verdict
from mailfathom.core.errors import Code
from mailfathom.notifications.services import send_due_notifications
from tests import privacy
from tests.configure import configure
from tests.factories import MailAccountFactory, saved_registration
from tests.mailbox.factories import EmailFactory, mapped_folder

pytestmark = pytest.mark.django_db

BASE = "https://mail.example.org"
SECRET = "mfwh_test-secret-for-signing-4f1c"
# Mail content that must never reach a notification.
SUBJECT = "Quarterly invoice Zebracorn-7731"
SENDER_NAME = "Zelda Quillfeather"
SENDER = "zelda.quill@zebracorn.example"
MAIL_BODY = "Please wire the hullabaloo-4412 payment today."
DRAFT_BODY = "Dear Zelda, the marmalade-9923 payment is on its way."
CONTENT = (SUBJECT, SENDER_NAME, SENDER, MAIL_BODY, DRAFT_BODY, "Zebracorn", "zebracorn", "marmalade")


@pytest.fixture(autouse=True)
def notification_settings(settings):
    configure(
        settings,
        email_host="smtp.example.org",
        email_from="MailFathom <mailfathom@example.org>",
        public_base_url=BASE,
        notifications_digest_minutes=60,
        notifications_sync_failing_minutes=60,
        notifications_webhook_timeout_seconds=5,
    )


@pytest.fixture
def person() -> User:
    return User.objects.create_user("rita", email="rita@example.org", password="x", is_staff=True)


@pytest.fixture
def reviewed(person) -> MailAccount:
    account = MailAccountFactory(account_id="support")
    AccountMembership.objects.create(account=account, user=person, role=MembershipRole.REVIEWER)
    return account


@pytest.fixture
def foreign() -> MailAccount:
    """An account the person holds no role on."""
    return MailAccountFactory(account_id="board")


def _drafts(account: MailAccount, count: int, *, status: str = DraftStatus.PENDING) -> list[Draft]:
    folder = mapped_folder(account, f"inbox-{uuid.uuid4().hex[:6]}")
    privacy.remember(SUBJECT, SENDER, MAIL_BODY, DRAFT_BODY)
    made = []
    for _ in range(count):
        email = EmailFactory(
            folder=folder,
            subject=SUBJECT,
            sender_name=SENDER_NAME,
            sender_address=SENDER,
            body=MAIL_BODY,
            thread_id=uuid.uuid4(),
        )
        made.append(
            Draft.objects.create(
                account=account,
                email=email,
                body=DRAFT_BODY,
                intent=Intent.INQUIRY,
                language="en",
                verdict=Verdict.READY,
                model_alias="drafting",
                status=status,
            )
        )
    return made


def _prefer(user: User, **fields: object) -> NotificationPreference:
    secret = fields.pop("secret", "")
    preference = NotificationPreference(user=user, **fields)
    preference.set_webhook_secret(str(secret))
    preference.save()
    return preference


def _assert_no_content(text: str) -> None:
    for value in CONTENT:
        assert value not in text


# --- drafts waiting: a digest ------------------------------------------------------------


def test_digest_mail_lists_counts_and_queue_links_and_no_mail_content(person, reviewed, foreign):
    _drafts(reviewed, 3)
    _drafts(reviewed, 1, status=DraftStatus.APPROVED)  # reviewed already: not waiting
    _drafts(foreign, 2)
    _prefer(person, by_mail=True)

    outcome = send_due_notifications()

    assert outcome.sent == 1 and outcome.failed == 0
    [message] = mail.outbox
    assert message.to == ["rita@example.org"]
    assert message.from_email == "MailFathom <mailfathom@example.org>"
    assert message.subject == "MailFathom: drafts wait for review"
    assert "support: 3 drafts wait for review" in message.body
    assert (
        f"{BASE}/admin/answering/draft/?status__exact=pending&account__id__exact={reviewed.pk}"
        in message.body
    )
    assert f"{BASE}/admin/accounts/notificationpreference/" in message.body
    assert "board" not in message.body  # an account the person has no role on
    _assert_no_content(message.subject + message.body)
    _assert_no_content(
        json.dumps([message.to, message.cc, message.bcc, message.reply_to, message.extra_headers])
    )


def test_digest_repeats_no_more_often_than_its_interval_while_drafts_wait(person, reviewed):
    _drafts(reviewed, 2)
    _prefer(person, by_mail=True)
    now = timezone.now()

    send_due_notifications(now=now)
    _drafts(reviewed, 1)  # a new draft does not bring the next digest forward
    send_due_notifications(now=now + timedelta(minutes=5))
    send_due_notifications(now=now + timedelta(minutes=59))
    assert len(mail.outbox) == 1

    send_due_notifications(now=now + timedelta(minutes=60))
    assert len(mail.outbox) == 2
    assert "support: 3 drafts wait for review" in mail.outbox[1].body


def test_no_digest_when_nothing_waits_or_the_kind_is_off(person, reviewed):
    _drafts(reviewed, 2, status=DraftStatus.DISCARDED)
    _prefer(person, by_mail=True)
    send_due_notifications()
    assert mail.outbox == []

    _drafts(reviewed, 1)
    NotificationPreference.objects.filter(user=person).update(drafts_waiting=False)
    send_due_notifications()
    assert mail.outbox == []


def test_no_mail_while_the_operator_has_set_no_smtp_server(settings, person, reviewed):
    configure(settings, email_host="")
    _drafts(reviewed, 1)
    _prefer(person, by_mail=True)
    assert send_due_notifications().sent == 0
    assert mail.outbox == []


# --- the webhook ---------------------------------------------------------------------------


class Receiver:
    """A real HTTP server on loopback that records each request and answers as scripted."""

    def __init__(self) -> None:
        self.requests: list[tuple[dict[str, str], bytes]] = []
        self.paths: list[str] = []  # every request's method and path, whatever it was
        self.answers: list[tuple[int, dict[str, str]]] = []
        received = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                received.paths.append(f"GET {self.path}")
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def do_POST(self) -> None:
                received.paths.append(f"POST {self.path}")
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                received.requests.append((dict(self.headers), body))
                status, headers = received.answers.pop(0) if received.answers else (204, {})
                self.send_response(status)
                for name, value in headers.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hooks/mailfathom"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> Receiver:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=5)


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    with Receiver() as running:
        yield running


def _verified(headers: dict[str, str], body: bytes, secret: str) -> bool:
    """Check X-MailFathom-Signature as docs/operations/notifications.md tells a receiver to."""
    parts = dict(item.split("=", 1) for item in headers["X-MailFathom-Signature"].split(","))
    expected = hmac.new(secret.encode(), f"{parts['t']}.".encode() + body, hashlib.sha256).hexdigest()
    return hmac.compare_digest(expected, parts["v1"])


def test_webhook_is_signed_and_carries_counts_and_links_only(person, reviewed, foreign, receiver):
    _drafts(reviewed, 2)
    _drafts(foreign, 4)
    _prefer(person, webhook_url=receiver.url, secret=SECRET)

    assert send_due_notifications().sent == 1

    [(headers, body)] = receiver.requests
    assert _verified(headers, body, SECRET)
    assert not _verified(headers, body, "another secret")
    assert not _verified(headers, body + b" ", SECRET)  # the body is what is signed
    assert headers["Content-Type"] == "application/json"
    payload = json.loads(body)
    assert payload["kind"] == "drafts_waiting"
    assert payload["accounts"] == [
        {
            "account": "support",
            "waiting": 2,
            "link": f"{BASE}/admin/answering/draft/?status__exact=pending&account__id__exact={reviewed.pk}",
        }
    ]
    _assert_no_content(body.decode())
    assert b"board" not in body
    assert b"rita@example.org" not in body


def test_a_failed_webhook_records_nothing_and_is_delivered_on_the_next_pass(person, reviewed, receiver):
    _drafts(reviewed, 1)
    _prefer(person, webhook_url=receiver.url, secret=SECRET)
    # The redirect leads back to this receiver over plain http, so following it would show.
    receiver.answers = [(500, {}), (307, {"Location": receiver.url + "/redirected"})]
    now = timezone.now()

    assert send_due_notifications(now=now).failed == 1
    assert send_due_notifications(now=now + timedelta(minutes=5)).failed == 1  # a redirect is not followed
    assert not NotificationSent.objects.exists()
    assert send_due_notifications(now=now + timedelta(minutes=10)).sent == 1
    assert receiver.paths == ["POST /hooks/mailfathom"] * 3  # the redirect was not followed
    assert send_due_notifications(now=now + timedelta(minutes=15)).sent == 0


@pytest.mark.parametrize(
    ("url", "allowed"),
    [
        ("https://hooks.example.org/mf", True),
        ("http://127.0.0.1:9000/mf", True),
        ("http://[::1]/mf", True),
        ("http://hooks.example.org/mf", False),
        ("https://user:pw@hooks.example.org/mf", False),
        ("ftp://hooks.example.org/mf", False),
        ("hooks.example.org", False),
    ],
)
def test_a_webhook_is_https_except_on_loopback(url, allowed):
    assert (webhook_url_problem(url) == "") is allowed


# --- synchronization failing, sign-in needed -----------------------------------------------


def _failing(account: MailAccount, since, code: int = Code.CANNOT_CONNECT) -> None:
    mapped_folder(
        account,
        f"f-{uuid.uuid4().hex[:6]}",
        last_failure_code=code,
        last_failure_at=timezone.now(),
        consecutive_failures=5,
        failing_since=since,
    )


def test_sync_failing_longer_than_the_threshold_is_told_once(person, reviewed, foreign):
    now = timezone.now()
    _failing(reviewed, now - timedelta(minutes=30))
    _failing(foreign, now - timedelta(hours=3))
    _prefer(person, by_mail=True, drafts_waiting=False)

    send_due_notifications(now=now)
    assert mail.outbox == []  # 30 minutes: under the threshold; the other account is not theirs

    for minutes in (31, 36, 41, 200):
        send_due_notifications(now=now + timedelta(minutes=minutes))
    [message] = mail.outbox
    assert message.subject == "MailFathom: synchronization is failing"
    assert "support: failing since" in message.body
    assert f"{int(Code.CANNOT_CONNECT)}: {Code.CANNOT_CONNECT.sentence}" in message.body
    assert f"{BASE}/admin/status/" in message.body
    assert f"{BASE}/admin/accounts/mailaccount/{reviewed.pk}/change/" in message.body
    assert "board" not in message.body


def test_a_new_failing_streak_is_told_again(person, reviewed):
    now = timezone.now()
    _failing(reviewed, now - timedelta(hours=2))
    _prefer(person, by_mail=True)
    send_due_notifications(now=now)
    reviewed.synced_folders.all().record_progress(now + timedelta(minutes=1))  # healthy again
    send_due_notifications(now=now + timedelta(minutes=5))
    reviewed.synced_folders.update(
        last_failure_code=Code.TIMED_OUT, failing_since=now + timedelta(minutes=10)
    )
    send_due_notifications(now=now + timedelta(minutes=90))

    assert len(mail.outbox) == 2
    assert str(int(Code.TIMED_OUT)) in mail.outbox[1].body


def test_needs_sign_in_again_is_told_once_with_the_account_page(person, reviewed):
    registration = saved_registration(
        "client-secret-canary-77a1", name="Contoso", provider=ProviderKind.MICROSOFT, client_id="c"
    )
    MailAccount.objects.filter(pk=reviewed.pk).update(
        auth_method=AuthMethod.OAUTH2, oauth_registration=registration, security=Security.TLS
    )
    now = timezone.now()
    OAuthGrant.objects.create(
        account=reviewed,
        state=GrantState.NEEDS_SIGN_IN,
        state_code=Code.SIGN_IN_NEEDED,
        state_since=now - timedelta(minutes=3),
        subject="owner-signed-in@contoso.example",
        signed_in_at=now - timedelta(days=2),
        refresh_token_encrypted=crypto.encrypt("refresh-canary-0c9a44"),
    )
    privacy.remember("owner-signed-in@contoso.example")
    _prefer(person, by_mail=True)

    send_due_notifications(now=now)
    send_due_notifications(now=now + timedelta(minutes=5))

    [message] = mail.outbox
    assert message.subject == "MailFathom: a mailbox needs signing in again"
    assert "support: needs signing in again since" in message.body
    assert f"{BASE}/admin/accounts/mailaccount/{reviewed.pk}/change/" in message.body
    assert "owner-signed-in@contoso.example" not in message.body  # who signed in is an address
    assert str(int(Code.SIGN_IN_NEEDED)) in message.body


# --- who is told about what ---------------------------------------------------------------


def test_a_person_is_never_told_about_an_account_they_have_no_role_on(person, foreign):
    now = timezone.now()
    _drafts(foreign, 2)
    _failing(foreign, now - timedelta(days=1))
    _prefer(person, by_mail=True)

    assert send_due_notifications(now=now).sent == 0
    assert mail.outbox == []


def test_a_group_role_counts(person, foreign):
    group = Group.objects.create(name="board reviewers")
    person.groups.add(group)
    AccountMembership.objects.create(account=foreign, group=group, role=MembershipRole.REVIEWER)
    _drafts(foreign, 1)
    _prefer(person, by_mail=True)

    send_due_notifications()
    [message] = mail.outbox
    assert "board: 1 draft waits for review" in message.body


def test_an_operator_is_told_about_every_account_only_when_they_ask(reviewed, foreign):
    operator = User.objects.create_user("olga", email="olga@example.org", password="x", is_staff=True)
    operator.user_permissions.add(Permission.objects.get(codename="see_every_account"))
    _drafts(reviewed, 1)
    _drafts(foreign, 2)
    preference = _prefer(operator, by_mail=True)
    now = timezone.now()

    send_due_notifications(now=now)
    assert mail.outbox == []  # no role of their own

    preference.every_account = True
    preference.save()
    send_due_notifications(now=now + timedelta(minutes=5))
    [message] = mail.outbox
    assert "board: 2 drafts wait" in message.body and "support: 1 draft waits" in message.body


def test_an_inactive_person_is_told_nothing(person, reviewed):
    _drafts(reviewed, 1)
    _prefer(person, by_mail=True)
    User.objects.filter(pk=person.pk).update(is_active=False)
    send_due_notifications()
    assert mail.outbox == []

"""The admin connection test against a real Dovecot: login, folder listing, failures, mapping."""

from __future__ import annotations

import logging
import socket
import threading
import time
from collections.abc import Iterator

import pytest
from django.contrib.auth.models import Permission, User
from django.contrib.messages import get_messages
from django.test import Client
from django.urls import reverse

from accounts.models import FolderMapping, MailAccount, Security
from accounts.services import connection
from tests.configure import configure
from tests.dovecot import DovecotServer
from tests.factories import FolderMappingFactory, MailAccountFactory
from tests.support import free_port

SERVER_FOLDERS = {"INBOX", "Sent", "Drafts", "Junk", "Trash", "Archive", "Projects", "Projects/Café"}
SUGGESTED_ROLES = {
    "INBOX": "inbox",
    "Sent": "sent",
    "Drafts": "drafts",
    "Junk": "junk",
    "Trash": "trash",
    "Archive": "archive",
    "Projects": "",
    "Projects/Café": "",
}


def make_account(
    host: str = "127.0.0.1",
    port: int = 143,
    security: str = Security.NONE,
    username: str = "alice",
    credential: str | None = "alice-secret",
) -> MailAccount:
    account = MailAccountFactory(imap_host=host, imap_port=port, security=security, username=username)
    if credential is not None:
        account.set_credential(credential)
        account.save()
    return account


def new_log_lines(server: DovecotServer, offset: int, containing: str) -> list[str]:
    """Dovecot's log lines written after `offset` that contain `containing` (waits briefly)."""
    deadline = time.monotonic() + 3
    while True:
        with server.log_path.open(errors="replace") as log:
            log.seek(offset)
            lines = [line for line in log.read().splitlines() if containing in line]
        if lines or time.monotonic() > deadline:
            return lines
        time.sleep(0.05)


@pytest.fixture
def silent_server() -> Iterator[int]:
    """A loopback port that accepts connections and never says a word; yields the port."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    listener.settimeout(0.1)
    accepted: list[socket.socket] = []
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                accepted.append(listener.accept()[0])
            except TimeoutError:
                continue

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield int(listener.getsockname()[1])
    stop.set()
    thread.join(timeout=5)
    for sock in [*accepted, listener]:
        sock.close()


# --- successful logins ---------------------------------------------------------------------


@pytest.mark.dovecot
@pytest.mark.django_db
def test_plain_login_on_loopback_lists_folders_with_suggested_roles_and_aliases(dovecot):
    offset = dovecot.log_path.stat().st_size
    account = make_account(port=dovecot.imap_port, security=Security.NONE)

    report = connection.test_connection(account, timeout=5)

    assert report.ok, report.message
    assert f"lists {len(SERVER_FOLDERS)} folders" in report.message
    by_name = {folder.name: folder for folder in report.folders}
    assert set(by_name) == SERVER_FOLDERS  # "Projects/Café" decoded from modified UTF-7
    assert {name: folder.suggested_role for name, folder in by_name.items()} == SUGGESTED_ROLES
    assert by_name["INBOX"].suggested_alias == "inbox"
    assert by_name["Projects/Café"].suggested_alias == "café"
    assert by_name["Sent"].suggested_alias == "sent"
    assert "\\Sent" in by_name["Sent"].flags
    assert "\\Noselect" in by_name["Projects"].flags and not by_name["Projects"].selectable
    assert by_name["Projects"].messages is None  # no STATUS is asked of a folder holding no mail
    assert by_name["INBOX"].messages is not None
    logins = new_log_lines(dovecot, offset, "Login: user=<alice>")
    assert logins and all(", TLS" not in line for line in logins)  # really a plain session


@pytest.mark.dovecot
@pytest.mark.django_db
def test_implicit_tls_login_lists_the_folders(dovecot, settings):
    configure(settings, imap_ca_file=str(dovecot.ca_path))
    account = make_account(port=dovecot.imaps_port, security=Security.TLS)

    report = connection.test_connection(account, timeout=5)

    assert report.ok, report.message
    assert {folder.name for folder in report.folders} == SERVER_FOLDERS


@pytest.mark.dovecot
@pytest.mark.django_db
def test_starttls_login_upgrades_the_plain_port_before_logging_in(dovecot, settings):
    configure(settings, imap_ca_file=str(dovecot.ca_path))
    offset = dovecot.log_path.stat().st_size
    account = make_account(
        username="bob", credential="bob-secret", port=dovecot.imap_port, security=Security.STARTTLS
    )

    report = connection.test_connection(account, timeout=5)

    assert report.ok, report.message
    assert {folder.suggested_role for folder in report.folders} == {
        "inbox",
        "sent",
        "drafts",
        "junk",
        "trash",
        "archive",
    }
    logins = new_log_lines(dovecot, offset, "Login: user=<bob>")
    assert logins and all(", TLS" in line for line in logins)


# --- failures --------------------------------------------------------------------------------


@pytest.mark.dovecot
@pytest.mark.django_db
def test_wrong_password_is_a_refused_login_and_never_shows_or_logs_the_password(dovecot, caplog):
    caplog.set_level(logging.DEBUG)
    account = make_account(port=dovecot.imap_port, credential="not-the-Secret-42")

    report = connection.test_connection(account, timeout=5)

    assert not report.ok
    assert report.folders == ()
    assert "refused the login" in report.message
    assert "not-the-Secret-42" not in report.message
    assert all("not-the-Secret-42" not in record.getMessage() for record in caplog.records)
    ours = [
        record
        for record in caplog.records
        if record.name == "accounts.services.connection" and record.levelno == logging.INFO
    ]
    assert len(ours) == 1
    assert account.account_id in ours[0].getMessage()
    assert "kind=login_refused" in ours[0].getMessage()
    assert "alice" not in ours[0].getMessage()
    assert "127.0.0.1" not in ours[0].getMessage()


@pytest.mark.django_db
def test_closed_port_says_no_imap_server_was_reached():
    account = make_account(port=free_port())

    report = connection.test_connection(account, timeout=5)

    assert not report.ok
    assert report.message == connection.SENTENCES["unreachable"]


@pytest.mark.django_db
def test_unknown_host_name_says_no_imap_server_was_reached():
    account = make_account(host="imap.mailfathom-test.invalid", port=993, security=Security.TLS)

    report = connection.test_connection(account, timeout=5)

    assert not report.ok
    assert report.message == connection.SENTENCES["unreachable"]


@pytest.mark.dovecot
@pytest.mark.django_db
def test_implicit_tls_to_a_plain_port_says_no_imap_server_was_reached(dovecot, settings):
    configure(settings, imap_ca_file=str(dovecot.ca_path))
    account = make_account(port=dovecot.imap_port, security=Security.TLS)

    report = connection.test_connection(account, timeout=5)

    assert not report.ok
    assert report.message == connection.SENTENCES["unreachable"]


@pytest.mark.dovecot
@pytest.mark.django_db
@pytest.mark.parametrize("security", [Security.TLS, Security.STARTTLS])
def test_certificate_from_an_unknown_authority_is_not_trusted(dovecot, security):
    port = dovecot.imaps_port if security == Security.TLS else dovecot.imap_port
    account = make_account(port=port, security=security)

    report = connection.test_connection(account, timeout=5)  # no CA file: system authorities only

    assert not report.ok
    assert report.message.startswith("The IMAP server's TLS certificate is not trusted")


@pytest.mark.dovecot
@pytest.mark.django_db
def test_server_without_starttls_is_reported(dovecot, settings):
    configure(settings, imap_ca_file=str(dovecot.ca_path))
    account = make_account(
        host=dovecot.plain_only_host, port=dovecot.plain_only_port, security=Security.STARTTLS
    )

    report = connection.test_connection(account, timeout=5)

    assert not report.ok
    assert "does not offer STARTTLS" in report.message


@pytest.mark.dovecot
@pytest.mark.django_db
def test_server_refusing_passwords_in_clear_is_reported_before_sending_one(dovecot):
    offset = dovecot.log_path.stat().st_size
    account = make_account(host=dovecot.plain_only_host, port=dovecot.plain_only_port)

    report = connection.test_connection(account, timeout=5)

    assert not report.ok
    assert "refuses passwords on an unencrypted connection" in report.message
    disconnects = new_log_lines(dovecot, offset, f"lip={dovecot.plain_only_host}")
    assert disconnects and all("no auth attempts" in line for line in disconnects)


@pytest.mark.django_db
def test_no_stored_credential_is_reported_before_connecting(silent_server):
    account = make_account(port=silent_server, credential=None)

    started = time.monotonic()
    report = connection.test_connection(account, timeout=5)

    assert not report.ok
    assert report.message.startswith("No password is stored for this account")
    assert time.monotonic() - started < 1  # never waited on the silent server


@pytest.mark.django_db
def test_unencrypted_imap_to_a_remote_host_is_refused_without_connecting():
    account = make_account(host="imap.mailfathom-test.invalid", security=Security.NONE)

    report = connection.test_connection(account, timeout=5)

    assert not report.ok
    assert "allowed only for a loopback host" in report.message


@pytest.mark.django_db
def test_server_that_never_greets_is_given_up_after_the_timeout(silent_server):
    account = make_account(port=silent_server)

    started = time.monotonic()
    report = connection.test_connection(account, timeout=0.5)

    assert not report.ok
    assert report.message == connection.SENTENCES["unreachable"]
    assert time.monotonic() - started < 5


# --- applying suggested mappings -----------------------------------------------------------------


@pytest.mark.dovecot
@pytest.mark.django_db
def test_applying_every_suggested_role_maps_the_special_folders(dovecot):
    account = make_account(port=dovecot.imap_port)
    report = connection.test_connection(account, timeout=5)
    assert report.ok, report.message
    chosen = [(f.name, f.suggested_alias, f.suggested_role) for f in report.folders if f.suggested_role]

    created = connection.apply_suggested_mappings(account, chosen)

    assert created == 6
    rows = set(account.folders.values_list("remote_name", "alias", "role"))
    assert rows == {
        ("INBOX", "inbox", "inbox"),
        ("Sent", "sent", "sent"),
        ("Drafts", "drafts", "drafts"),
        ("Junk", "junk", "junk"),
        ("Trash", "trash", "trash"),
        ("Archive", "archive", "archive"),
    }
    assert connection.apply_suggested_mappings(account, chosen) == 0  # nothing twice


@pytest.mark.django_db
def test_apply_skips_mapped_aliases_taken_roles_mapped_folders_and_invalid_rows():
    account = make_account()
    FolderMappingFactory(account=account, alias="sent", remote_name="Sent Items", role="sent")
    other = make_account()
    FolderMappingFactory(account=other, alias="inbox", remote_name="INBOX", role="inbox")

    created = connection.apply_suggested_mappings(
        account,
        [
            ("Sent", "Sent", "sent"),  # alias already mapped (compared case-folded)
            ("Gesendet", "gesendet", "sent"),  # role already carried by Sent Items
            ("Sent Items", "sent items", ""),  # remote folder already mapped
            ("INBOX", "Inbox ", "inbox"),  # created; another account's inbox does not matter
            ("Junk", " JUNK", "junk"),  # created, alias normalized
            ("Spam", "junk", ""),  # alias taken earlier in the same batch
            ("Bulk", "bulk", "junk"),  # role taken earlier in the same batch
            ("Trash", "trash", "bin"),  # not a role
            ("Blank", "   ", ""),  # blank alias
        ],
    )

    assert created == 2
    assert set(account.folders.values_list("remote_name", "alias", "role")) == {
        ("Sent Items", "sent", "sent"),
        ("INBOX", "inbox", "inbox"),
        ("Junk", "junk", "junk"),
    }


# --- the admin page ---------------------------------------------------------------------------


def page_url(account: MailAccount) -> str:
    return reverse("admin:accounts_mailaccount_test_connection", args=[account.pk])


def press_test(client: Client, account: MailAccount):
    """Press "Test connection" on the page with the saved settings and a blank password."""
    return client.post(
        page_url(account),
        {
            "imap_host": account.imap_host,
            "imap_port": str(account.imap_port),
            "security": account.security,
            "username": account.username,
            "password": "",
            "_test_connection": "Test connection",
        },
    )


@pytest.mark.dovecot
@pytest.mark.django_db
def test_admin_page_shows_the_folders_and_pre_ticks_unmapped_special_folders(dovecot, admin_client):
    account = make_account(port=dovecot.imap_port)
    FolderMappingFactory(account=account, alias="outbox", remote_name="Sent", role="")
    FolderMappingFactory(account=account, alias="old junk", remote_name="Old/Junk", role="junk")

    response = press_test(admin_client, account)

    assert response.status_code == 200
    assert [t.name for t in response.templates][0] == "admin/accounts/mailaccount/test_connection.html"
    content = response.content.decode()
    assert "Logged in to 127.0.0.1" in content
    assert "Projects/Café" in content
    rows = {form.initial["remote_name"]: form.initial for form in response.context["formset"]}
    assert {name: row["apply"] for name, row in rows.items()} == {
        "INBOX": True,
        "Drafts": True,
        "Trash": True,
        "Archive": True,
        "Sent": False,  # this remote folder is already mapped
        "Junk": False,  # its role is taken by another folder
        "Projects": False,  # \Noselect, no role
        "Projects/Café": False,  # no role
    }
    assert rows["Junk"]["role"] == "" and rows["Sent"]["role"] == "sent"
    assert rows["Sent"]["mapped_as"] == "outbox"
    # Two boxes a row: Map, and Visible to tools (unticked for Junk and Trash).
    assert content.count('type="checkbox"') == 2 * len(SERVER_FOLDERS)
    assert {name for name, row in rows.items() if not row["visible_to_tools"]} == {"Junk", "Trash"}
    assert content.count("checked") == 4 + len(SERVER_FOLDERS) - 2
    assert 'name="folder-0-alias"' in content and 'name="folder-0-role"' in content
    assert 'name="csrfmiddlewaretoken"' in content


@pytest.mark.dovecot
@pytest.mark.django_db
def test_admin_page_shows_the_failure_sentence_and_no_table(dovecot, admin_client):
    account = make_account(port=dovecot.imap_port, credential="wrong-Password-7")

    response = press_test(admin_client, account)

    assert response.status_code == 200
    content = response.content.decode()
    assert "The server refused the login; check the IMAP user name and the stored password." in content
    assert "wrong-Password-7" not in content
    assert "remote-folders" not in content


@pytest.mark.dovecot
@pytest.mark.django_db
def test_admin_post_creates_the_ticked_mappings_and_redirects_to_the_account(dovecot, admin_client):
    account = make_account(port=dovecot.imap_port)
    formset = press_test(admin_client, account).context["formset"]
    data = {"folder-TOTAL_FORMS": str(len(formset.forms)), "folder-INITIAL_FORMS": "0"}
    for index, form in enumerate(formset.forms):
        row = form.initial
        if row["remote_name"] in {"INBOX", "Junk", "Projects/Café"}:
            data[f"folder-{index}-apply"] = "on"
        data[f"folder-{index}-remote_name"] = row["remote_name"]
        data[f"folder-{index}-alias"] = "work" if row["remote_name"] == "Projects/Café" else row["alias"]
        data[f"folder-{index}-role"] = row["role"]
        if row["visible_to_tools"]:
            data[f"folder-{index}-visible_to_tools"] = "on"

    response = admin_client.post(page_url(account), data)

    assert response.status_code == 302
    assert response.url == reverse("admin:accounts_mailaccount_change", args=[account.pk])
    assert [str(m) for m in get_messages(response.wsgi_request)] == ["3 folder mappings created."]
    assert set(account.folders.values_list("remote_name", "alias", "role", "visible_to_tools")) == {
        ("INBOX", "inbox", "inbox", True),
        ("Junk", "junk", "junk", False),  # as the page offered it: junk is hidden by default
        ("Projects/Café", "work", "", True),
    }


@pytest.mark.django_db
def test_admin_post_with_an_invalid_row_creates_nothing_and_shows_the_error(admin_client):
    account = make_account()
    data = {
        "folder-TOTAL_FORMS": "2",
        "folder-INITIAL_FORMS": "0",
        "folder-0-apply": "on",
        "folder-0-remote_name": "INBOX",
        "folder-0-alias": "inbox",
        "folder-0-role": "inbox",
        "folder-1-apply": "on",
        "folder-1-remote_name": "Archive",
        "folder-1-alias": "  ",
        "folder-1-role": "archive",
    }

    response = admin_client.post(page_url(account), data)

    assert response.status_code == 200
    content = response.content.decode()
    assert "no folder mapping was created" in content
    assert "A folder to map needs an alias." in content
    assert not FolderMapping.objects.filter(account=account).exists()


@pytest.mark.django_db
def test_admin_post_without_csrf_token_is_refused(admin_user):
    account = make_account()
    client = Client(enforce_csrf_checks=True)
    client.force_login(admin_user)
    data = {
        "folder-TOTAL_FORMS": "1",
        "folder-INITIAL_FORMS": "0",
        "folder-0-apply": "on",
        "folder-0-remote_name": "INBOX",
        "folder-0-alias": "inbox",
        "folder-0-role": "inbox",
    }

    response = client.post(page_url(account), data)

    assert response.status_code == 403
    assert not FolderMapping.objects.filter(account=account).exists()


@pytest.mark.django_db
def test_admin_page_is_404_for_an_unknown_account(admin_client):
    response = admin_client.get(reverse("admin:accounts_mailaccount_test_connection", args=[987654]))

    assert response.status_code == 404


@pytest.mark.django_db
def test_admin_page_needs_change_permission(client):
    account = make_account()
    viewer = User.objects.create_user("viewer", password="viewer-pass-123", is_staff=True)
    # An operator who may only look: every account is in sight, none may be changed.
    viewer.user_permissions.add(
        *Permission.objects.filter(codename__in=["view_mailaccount", "see_every_account"])
    )
    client.force_login(viewer)

    get = client.get(page_url(account))
    post = client.post(page_url(account), {"folder-TOTAL_FORMS": "0", "folder-INITIAL_FORMS": "0"})
    test = press_test(client, account)

    assert get.status_code == 403
    assert post.status_code == 403
    assert test.status_code == 403

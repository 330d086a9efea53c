"""Attachment download links: when they are issued, and what a GET of one returns or refuses."""

from __future__ import annotations

import hashlib
import logging
import zlib
from datetime import UTC, datetime, timedelta
from email.message import EmailMessage

import pytest
from django.utils import timezone

from accounts.models import FolderMapping, MailAccount
from mailbox.models import Email, RawMessage
from mailbox.services import attachment_links
from mailbox.services.content import get_email_content
from mailfathom.core import signing
from tests.factories import MailAccountFactory
from tests.mailbox.factories import mapped_folder, stored_email

pytestmark = [pytest.mark.django_db, pytest.mark.urls("tests.mailbox.download_urls")]

BASE_URL = "https://mail.example.org"
PDF = b"%PDF-1.4\n" + bytes(range(256)) * 3
HTML = b"<html><script>alert(document.cookie)</script></html>"
SVG = b'<svg xmlns="http://www.w3.org/2000/svg" onload="alert(1)"/>'


def with_attachments() -> EmailMessage:
    msg = EmailMessage()
    msg["From"] = "alice@example.org"
    msg["To"] = "bob@example.net"
    msg["Subject"] = "files"
    msg.set_content("see attached")
    msg.add_attachment(PDF, maintype="application", subtype="pdf", filename="rapport d'été.pdf")
    msg.add_attachment(HTML, maintype="text", subtype="html", filename="page.html")
    msg.add_attachment(SVG, maintype="image", subtype="svg+xml", filename="logo.svg")
    msg.add_attachment(b"unnamed bytes", maintype="application", subtype="octet-stream")
    return msg


@pytest.fixture
def email(mailfathom_settings):
    mailfathom_settings(public_base_url=BASE_URL)
    account = MailAccountFactory(account_id="billing")
    return stored_email(mapped_folder(account, "inbox"), with_attachments())


def attachments(email: Email, **kwargs):
    return get_email_content([str(email.pk)], **kwargs).emails[0].content.attachments


def issued(email: Email):
    found = attachments(email, include_attachment_download_links=True)
    assert all(a.download_state == "issued" for a in found)
    return found


def path_of(url: str) -> str:
    assert url.startswith(BASE_URL + "/attachments/")
    return url[len(BASE_URL) :]


def token_of(url: str) -> str:
    return url.rsplit("/", 1)[1]


# --- whether links are issued ------------------------------------------------------------


def test_links_are_not_requested_by_default(email):
    for attachment in attachments(email):
        assert attachment.download_state == "notRequested"
        assert attachment.download_url is None and attachment.download_expires_at is None


def test_links_are_unavailable_without_a_public_base_url(email, mailfathom_settings):
    mailfathom_settings(public_base_url="")
    found = attachments(email, include_attachment_download_links=True)
    assert {a.download_state for a in found} == {"unavailable"}
    assert all(a.download_url is None for a in found)


def test_links_are_unavailable_with_an_empty_key_ring(email, settings):
    settings.MAILFATHOM_KEYRING = " , "
    found = attachments(email, include_attachment_download_links=True)
    assert {a.download_state for a in found} == {"unavailable"}


def test_issued_link_expires_after_the_configured_minutes(email, mailfathom_settings):
    before = timezone.now().replace(microsecond=0)
    (first, *_rest) = issued(email)
    assert (
        before + timedelta(minutes=10) <= first.download_expires_at <= timezone.now() + timedelta(minutes=10)
    )
    mailfathom_settings(attachment_link_minutes=3)
    (first, *_rest) = issued(email)
    assert first.download_expires_at <= timezone.now() + timedelta(minutes=3)
    assert first.download_expires_at >= before + timedelta(minutes=3)


def test_wire_carries_url_and_expiry_only_when_issued(email):
    wire = get_email_content([str(email.pk)], include_attachment_download_links=True).wire()
    first = wire["emails"][0]["content"]["attachments"][0]
    assert first["downloadState"] == "issued"
    assert first["downloadUrl"].startswith(BASE_URL + "/attachments/")
    assert datetime.fromisoformat(first["downloadExpiresAt"]) > datetime.now(UTC)


# --- downloading -------------------------------------------------------------------------


def test_download_returns_exactly_the_bytes_with_safe_headers(email, client):
    pdf = issued(email)[0]
    response = client.get(path_of(pdf.download_url))
    assert response.status_code == 200
    assert response.content == PDF
    assert response["Content-Type"] == "application/pdf"
    assert response["Content-Disposition"] == "attachment; filename*=UTF-8''rapport%20d%27%C3%A9t%C3%A9.pdf"
    assert response["X-Content-Type-Options"] == "nosniff"
    assert response["Cache-Control"] == "no-store"
    assert response["Referrer-Policy"] == "no-referrer"


def test_html_and_svg_attachments_are_served_as_octet_stream(email, client):
    _pdf, html, svg, _unnamed = issued(email)
    html_response = client.get(path_of(html.download_url))
    svg_response = client.get(path_of(svg.download_url))
    assert (html_response.content, html_response["Content-Type"]) == (HTML, "application/octet-stream")
    assert (svg_response.content, svg_response["Content-Type"]) == (SVG, "application/octet-stream")
    assert html_response["Content-Disposition"] == "attachment; filename*=UTF-8''page.html"


def test_unnamed_attachment_is_served_with_a_bare_disposition(email, client):
    unnamed = issued(email)[3]
    response = client.get(path_of(unnamed.download_url))
    assert response.content == b"unnamed bytes"
    assert response["Content-Disposition"] == "attachment"


def refused_alike(client, path: str) -> None:
    response = client.get(path)
    assert response.status_code == 404
    assert response.content == b"This download link is not valid."
    assert response["Cache-Control"] == "no-store"
    assert response["Referrer-Policy"] == "no-referrer"


def test_expired_link_is_refused(email, client):
    part = issued(email)[0]
    # The same part, minted eleven minutes ago: its ten minutes are over.
    past = attachment_links.issue_link(
        email.pk,
        attachment_links.read_link(token_of(part.download_url)).part_index,
        RawMessage.objects.get(email=email).sha256,
        now=timezone.now() - timedelta(minutes=11),
    )
    assert client.get(path_of(part.download_url)).status_code == 200
    refused_alike(client, path_of(past.url))


def test_altered_tokens_are_refused_alike(email, client):
    url = issued(email)[0].download_url
    payload, signature = token_of(url).split(".")
    flipped = signature[:-2] + ("A" if signature[-2] != "A" else "B") + signature[-1]
    for token in (f"{payload}.{flipped}", f"{payload}x.{signature}", payload, "a" * 600):
        refused_alike(client, f"/attachments/{token}")


def test_token_signed_for_another_purpose_is_refused(email, client):
    payload = signing.verify(attachment_links.PURPOSE, token_of(issued(email)[0].download_url))
    refused_alike(client, f"/attachments/{signing.sign('list-cursor', payload)}")


def test_token_signed_by_an_older_ring_key_still_works(email, client, settings):
    url = issued(email)[0].download_url
    settings.MAILFATHOM_KEYRING = (
        "bmV3ZXIta2V5LWZvci1yb3RhdGlvbi10ZXN0cy0wMDA=," + settings.MAILFATHOM_KEYRING
    )
    assert client.get(path_of(url)).content == PDF
    settings.MAILFATHOM_KEYRING = "bmV3ZXIta2V5LWZvci1yb3RhdGlvbi10ZXN0cy0wMDA="
    refused_alike(client, path_of(url))


def test_link_of_an_account_unserved_after_issue_is_refused(email, client):
    url = issued(email)[0].download_url
    MailAccount.objects.filter(pk=email.account_id).update(served=False)
    refused_alike(client, path_of(url))


def test_link_of_a_folder_hidden_after_issue_is_refused(email, client):
    url = issued(email)[0].download_url
    FolderMapping.objects.filter(pk=email.folder.mapping_id).update(visible_to_tools=False)
    refused_alike(client, path_of(url))


def test_link_to_a_part_that_is_not_an_attachment_is_refused(email, client):
    sha = RawMessage.objects.get(email=email).sha256
    body_part = attachment_links.issue_link(email.pk, 1, sha)  # part 1 is the text body
    refused_alike(client, path_of(body_part.url))
    assert client.get(path_of(attachment_links.issue_link(email.pk, 2, sha).url)).content == PDF


def test_link_stops_working_when_the_stored_copy_changes(email, client):
    url = issued(email)[0].download_url
    other = with_attachments()
    other.replace_header("Subject", "a different message")
    raw = other.as_bytes()
    RawMessage.objects.filter(email=email).update(
        compressed=zlib.compress(raw),
        original_size=len(raw),
        sha256=hashlib.sha256(raw).hexdigest(),
    )
    refused_alike(client, path_of(url))


def test_only_get_is_served(email, client):
    path = path_of(issued(email)[0].download_url)
    assert client.post(path).status_code == 405
    assert client.put(path).status_code == 405


def test_tokens_are_never_logged(email, client, caplog):
    path = path_of(issued(email)[0].download_url)
    token = token_of(path)
    caplog.set_level(logging.DEBUG)
    client.get(path)
    client.get(path[:-3] + "xyz")
    client.post(path)
    client.get("/attachments-elsewhere/xyz")  # an ordinary 404, which Django does log
    assert "attachments-elsewhere" in caplog.text
    assert token not in caplog.text
    assert token[:-3] not in caplog.text


def test_a_token_claiming_more_than_thirty_minutes_is_refused(email, mailfathom_settings):
    mailfathom_settings(attachment_link_minutes=30)
    sha = RawMessage.objects.get(email=email).sha256
    future = attachment_links.issue_link(email.pk, 2, sha, now=timezone.now() + timedelta(minutes=5))
    assert attachment_links.read_link(token_of(future.url)) is None
    fresh = attachment_links.issue_link(email.pk, 2, sha)
    assert attachment_links.read_link(token_of(fresh.url)) is not None


# --- the bearer token never reaches a log, whatever the method or path -------------------


def strict_client():
    """A client that enforces CSRF as a browser's request meets it (the default client skips it)."""
    from django.test import Client

    return Client(enforce_csrf_checks=True)


def assert_token_absent(caplog, token: str) -> None:
    assert token not in caplog.text
    assert token[:40] not in caplog.text
    for record in caplog.records:
        assert token not in str(getattr(record, "request", ""))


@pytest.mark.parametrize("method", ["post", "put", "patch", "delete", "options"])
def test_other_methods_get_405_and_the_token_is_not_logged(email, caplog, method):
    path = path_of(issued(email)[0].download_url)
    caplog.set_level(logging.DEBUG)
    response = getattr(strict_client(), method)(path)
    assert response.status_code == 405
    assert response["Allow"] == "GET, HEAD"
    assert response["Cache-Control"] == "no-store"
    assert_token_absent(caplog, token_of(path))


def test_head_is_answered_like_get_without_a_body(email, client):
    path = path_of(issued(email)[0].download_url)
    response = client.head(path)
    assert response.status_code == 200
    assert response.content == b""
    assert response["Content-Type"] == "application/pdf"


@pytest.mark.parametrize("suffix", ["/", "/extra", "/extra/"])
def test_paths_below_a_link_are_refused_alike_and_not_logged(email, client, caplog, suffix):
    path = path_of(issued(email)[0].download_url)
    caplog.set_level(logging.DEBUG)
    refused_alike(client, path + suffix)
    assert_token_absent(caplog, token_of(path))


def test_the_bare_attachments_path_is_refused_alike(client):
    refused_alike(client, "/attachments/")


@pytest.mark.urls("mailfathom.urls")
def test_with_the_project_urls_a_csrf_less_post_gets_405_and_no_log(email, caplog):
    path = path_of(issued(email)[0].download_url)
    caplog.set_level(logging.DEBUG)
    strict = strict_client()
    assert strict.post(path).status_code == 405
    assert strict.get(path + "/").status_code == 404
    assert strict.get(path).content == PDF
    assert_token_absent(caplog, token_of(path))


def test_django_request_log_lines_about_attachment_paths_are_redacted(caplog):
    """Defence in depth: a line Django would write about such a path carries no token."""
    from django.http import HttpResponseNotFound
    from django.test import RequestFactory
    from django.utils.log import log_response

    token = "c2VjcmV0LWJlYXJlci10b2tlbi1mb3ItYS1sb2ctdGVzdA.sig-nature-part"
    caplog.set_level(logging.DEBUG)
    for path in (f"/attachments/{token}", f"/attachments/{token}/x"):
        request = RequestFactory().get(path)
        log_response("Not Found: %s", path, response=HttpResponseNotFound(), request=request)
        log_response(
            "Forbidden (%s): %s",
            "CSRF cookie not set.",
            path,
            response=HttpResponseNotFound(status=403),
            request=request,
            logger=logging.getLogger("django.security.csrf"),
        )
    assert len(caplog.records) == 4
    assert "/attachments/" in caplog.text
    assert_token_absent(caplog, token)

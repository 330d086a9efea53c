"""A CA certificate per account: validated on the form, trusted by the test and by synchronization."""

from __future__ import annotations

import datetime

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from django.core.exceptions import ValidationError
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from accounts.certificates import ALL_EXPIRED, NOT_PEM, PRIVATE_KEY, clean_ca_bundle
from accounts.models import MailAccount, Security
from accounts.services import connection, imap
from mailbox.sync.failures import TLS_FAILED, classify
from mailfathom.core.errors import Code
from tests.factories import MailAccountFactory, account_form_data


def _ca(days: int) -> tuple[str, str]:
    """A self-signed CA valid until `days` from now (negative: expired); its PEM and its key's."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "In-house CA")])
    now = datetime.datetime.now(datetime.UTC)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=30 + max(0, -days)))
        .not_valid_after(now + datetime.timedelta(days=days))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .sign(key, hashes.SHA256())
    )
    key_pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    return certificate.public_bytes(serialization.Encoding.PEM).decode(), key_pem.decode()


# --- validation --------------------------------------------------------------------------------


def test_a_valid_bundle_is_kept_as_its_certificates_only():
    current, _ = _ca(365)
    expired, _ = _ca(-1)
    cleaned = clean_ca_bundle(f"comment line\n{expired}\n{current}\n")
    assert cleaned.count("-----BEGIN CERTIFICATE-----") == 2
    assert "comment line" not in cleaned
    assert clean_ca_bundle("  \n") == ""


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ("hello, not a certificate", NOT_PEM),
        ("-----BEGIN CERTIFICATE-----\nbm90IGEgY2VydA==\n-----END CERTIFICATE-----\n", NOT_PEM),
        ("key", PRIVATE_KEY),
        ("expired", ALL_EXPIRED),
    ],
    ids=["text", "broken-pem", "private-key", "expired-only"],
)
def test_what_is_no_usable_ca_certificate_is_refused_in_words(text, error):
    if text == "key":
        certificate, key = _ca(365)
        text = certificate + key
    elif text == "expired":
        text, _ = _ca(-1)
    with pytest.raises(ValidationError) as refused:
        clean_ca_bundle(text)
    assert refused.value.messages == [error]


# --- the admin form ----------------------------------------------------------------------------


@pytest.mark.django_db
def test_an_uploaded_ca_is_stored_with_the_account(admin_client):
    certificate, _ = _ca(365)
    form = account_form_data(imap_ca_upload=SimpleUploadedFile("ca.crt", certificate.encode()))
    response = admin_client.post(reverse("admin:accounts_mailaccount_add"), form)
    assert response.status_code == 302, response.content.decode()[:2000]
    assert MailAccount.objects.get(account_id="billing").imap_ca_pem == certificate


@pytest.mark.django_db
def test_a_pasted_private_key_is_refused_and_nothing_is_saved(admin_client):
    certificate, key = _ca(365)
    form = account_form_data(imap_ca_pem=certificate + key)
    response = admin_client.post(reverse("admin:accounts_mailaccount_add"), form)
    page = response.content.decode()
    assert response.status_code == 200
    assert "holds a private key" in page
    assert "PRIVATE KEY-----\n" not in page.split("errorlist", 1)[-1][:400]
    assert not MailAccount.objects.filter(account_id="billing").exists()


@pytest.mark.django_db
def test_a_binary_upload_is_refused_as_not_pem(admin_client):
    form = account_form_data(imap_ca_upload=SimpleUploadedFile("ca.der", b"\x30\x82\x01\xff\x00"))
    response = admin_client.post(reverse("admin:accounts_mailaccount_add"), form)
    assert response.status_code == 200
    assert "This is not a PEM certificate" in response.content.decode()


@pytest.mark.django_db
def test_adding_a_ca_to_an_account_with_a_stored_password_asks_for_it_again(admin_client):
    account = MailAccountFactory(account_id="ca", imap_host="imap.example.org", security="tls", imap_port=993)
    account.set_credential("stored-secret")
    account.save()
    certificate, _ = _ca(365)
    saved = {
        "account_id": "ca",
        "display_name": account.display_name,
        "imap_host": "imap.example.org",
        "username": account.username,
        "credential": "",
        "folders-TOTAL_FORMS": "0",
        "imap_ca_pem": certificate,
    }
    url = reverse("admin:accounts_mailaccount_change", args=[account.pk])
    response = admin_client.post(url, account_form_data(**saved))
    assert response.status_code == 200
    assert "Enter the password again" in response.content.decode()
    response = admin_client.post(url, account_form_data(**{**saved, "credential": "stored-secret"}))
    assert response.status_code == 302
    account.refresh_from_db()
    assert account.imap_ca_pem == certificate


# --- the test and synchronization trust it -------------------------------------------------------


def _tls_account(dovecot, security: str, ca: str = "") -> MailAccount:
    port = dovecot.imaps_port if security == Security.TLS else dovecot.imap_port
    account = MailAccountFactory(imap_port=port, security=security, username="alice", imap_ca_pem=ca)
    account.set_credential("alice-secret")
    account.save()
    return account


@pytest.mark.dovecot
@pytest.mark.django_db
@pytest.mark.parametrize("security", [Security.TLS, Security.STARTTLS])
def test_the_connection_test_trusts_the_accounts_own_ca(dovecot, security):
    without = connection.test_connection(_tls_account(dovecot, security), timeout=5)
    with_ca = connection.test_connection(
        _tls_account(dovecot, security, dovecot.ca_path.read_text()), timeout=5
    )

    assert (without.ok, without.kind, without.code) == (False, "tls_certificate", Code.TLS_FAILED)
    assert without.code == 61004
    assert "CA certificate" in without.message
    assert with_ca.ok, with_ca.message


@pytest.mark.dovecot
@pytest.mark.django_db
def test_synchronization_sessions_trust_the_accounts_own_ca(dovecot):
    untrusted = _tls_account(dovecot, Security.TLS)
    with pytest.raises(Exception) as refused:
        imap.open_client(untrusted, timeout=5)
    assert classify(refused.value) == TLS_FAILED

    client = imap.open_client(_tls_account(dovecot, Security.TLS, dovecot.ca_path.read_text()), timeout=5)
    assert client.list_folders()
    imap.close_client(client)

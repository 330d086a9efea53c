"""The admin in German for a German browser: labels, columns, actions, fieldsets and messages.

Each page is asked for with Accept-Language: de and must show our German words and not the
English labels they translate; English stays the default, word for word. The catalog is
checked whole (no entry untranslated or fuzzy, the committed .mo in step with the .po), and
labels made translatable without a migration keep the English Django derived.
"""

from __future__ import annotations

import gettext
import io
import re
from datetime import UTC, datetime
from pathlib import Path

import pytest
from django.conf import settings
from django.contrib.messages import get_messages
from django.core.management import call_command
from django.urls import reverse
from django.utils import translation
from django.utils.text import camel_case_to_spaces

from accounts.services.mcp_keys import create_key
from audit.access_models import AccessChannel, AccessEntry, AccessRequesterKind
from audit.hold_models import HoldRequesterKind, HoldScope
from audit.services import holds
from mailfathom.core.labels import FIELD_LABELS, MODEL_NAMES
from tests.answering.drafts_support import DraftFactory
from tests.factories import MailAccountFactory
from tests.mailbox.factories import EmailFactory, mapped_folder

pytestmark = pytest.mark.django_db

GERMAN = {"HTTP_ACCEPT_LANGUAGE": "de-DE,de;q=0.9"}
CATALOG = Path(settings.BASE_DIR) / "locale" / "de" / "LC_MESSAGES"


def _get(client, url: str, **headers: str) -> str:
    response = client.get(url, **headers)
    assert response.status_code == 200, url
    return response.content.decode()


def _speaks(page: str, german: list[str], english: list[str]) -> None:
    missing = [word for word in german if word not in page]
    leftover = [word for word in english if word in page]
    assert not missing, f"German missing: {missing}"
    assert not leftover, f"English left: {leftover}"


@pytest.fixture
def account():
    return MailAccountFactory(account_id="berlin", display_name="Berlin office")


@pytest.fixture
def email(account):
    return EmailFactory(
        folder=mapped_folder(account, "inbox"),
        subject="Quarterly figures",
        received_at=datetime(2026, 1, 15, 9, 5, tzinfo=UTC),
    )


def test_the_account_page_in_german(admin_client, account):
    page = _get(admin_client, reverse("admin:accounts_mailaccount_change", args=[account.pk]), **GERMAN)

    _speaks(
        page,
        german=[
            "IMAP-Server",  # fieldset titles
            "Zugriffsprotokoll",
            "Antwortentwürfe",
            "Synchronisierungsstatus",
            "Noch kein Ordner zugeordnet",
            "Kontokennung",  # field labels, declared and derived
            "Anzeigename",
            "IMAP-Benutzername",
            "Synchronisierungsmodus",
            "Aufbewahrung des Zugriffsprotokolls (Tage)",
            "Abrufen (Polling)",  # choices
            "Posteingang",
            "Nie (Entwürfe bleiben in MailFathom)",
            "Entwurfssignaturen",  # inlines
            "Personen (Inhaber, Vertretungen und Prüfer)",
            "Haken entfernen, um dieses Konto nicht mehr bereitzustellen",  # help text
            "Nicht verwendet: Dieses Konto meldet sich mit einem Passwort an.",
        ],
        english=[
            "IMAP server",
            "Account identifier",
            "Display name",
            "Synchronization mode",
            "Access trail",
            "Reply drafting",
            "Drafting signatures",
            "Inbox",
            "Not used: this account logs in with a password.",
            "No folder is mapped yet",
        ],
    )


def test_english_stays_the_default_word_for_word(admin_client, account):
    page = _get(admin_client, reverse("admin:accounts_mailaccount_change", args=[account.pk]))

    for english in ("IMAP server", "Account identifier", "Synchronization mode", "Access trail", "Inbox"):
        assert english in page
    assert "IMAP-Server" not in page and "Kontokennung" not in page


def test_the_account_list_and_its_actions_in_german(admin_client, account):
    page = _get(admin_client, reverse("admin:accounts_mailaccount_changelist"), **GERMAN)

    _speaks(
        page,
        german=[
            "MailFathom-Verwaltung",
            "E-Mail-Konten",
            "Letzte Synchronisierung",
            "Jetzt synchronisieren",
            "Jetzt Entwürfe erstellen",
        ],
        english=["MailFathom administration", "Mail accounts", "Last sync", "Synchronize now", "Draft now"],
    )


def test_the_folder_list_in_german(admin_client, email):
    page = _get(admin_client, reverse("admin:mailbox_folder_changelist"), **GERMAN)

    _speaks(
        page,
        german=["Name auf dem Server", "Zuletzt übernommen", "Letzter Fehlschlag", "Nachrichten"],
        english=["Remote name", "Last committed", "Last failure", "Interrupted run", "Synchronize now"],
    )
    assert "Unterbrochener Lauf" in page and "Jetzt synchronisieren" in page


def test_the_email_list_and_an_email_in_german(admin_client, email):
    listing = _get(admin_client, reverse("admin:mailbox_email_changelist"), **GERMAN)
    shown = _get(admin_client, reverse("admin:mailbox_email_change", args=[email.pk]), **GERMAN)

    _speaks(
        listing,
        german=["Empfangen", "Betreff", "Markierungen", "Eingehend", "Massen-E-Mail"],
        english=[">Subject<", ">Received<", ">Flags<", "Incoming", "Is bulk"],
    )
    _speaks(
        shown,
        german=[
            "Empfangen am",
            "Verfügbarkeit",
            "Empfänger",
            "Nachrichtentext (reiner Text)",
            "Technische Details",
            "Ordner auf dem Server",
        ],
        english=["Received at", "Availability", "Recipients", "Plain-text body", "Technical details"],
    )
    assert "Quarterly figures" in shown  # the mail itself is not translated


def test_the_draft_queue_in_german(admin_client, email):
    DraftFactory(email=email)

    page = _get(admin_client, reverse("admin:answering_draft_changelist"), **GERMAN)

    _speaks(
        page,
        german=["Zu prüfende Entwürfe", "Bewertung", "Gründe", "Bereit", "Bestellung", "Prüfung ausstehend"],
        english=["Drafts to review", "Verdict", "Reasons", "Pending review", ">Order<"],
    )
    assert "Ausgewählte Entwürfe erneut im Entwürfe-Ordner ablegen" in page


def test_the_access_trail_and_legal_holds_in_german(admin_client, account):
    AccessEntry.objects.create(
        account=account,
        account_identifier=account.account_id,
        accessed_at=datetime(2026, 11, 30, 8, 0, tzinfo=UTC),
        channel=AccessChannel.MCP,
        action="search_mail",
        requester_kind=AccessRequesterKind.MCP_KEY,
        requester="agent",
        email_count=2,
        retention_days=90,
    )
    hold = holds.place_hold(
        name="Acme v. Berlin",
        reason="Court order.",
        scope=HoldScope.ACCOUNT,
        account_ids=[account.account_id],
        requester=holds.Requester(name="hold-officer", kind=HoldRequesterKind.USER),
    )

    trail = _get(admin_client, reverse("admin:audit_accessentry_changelist"), **GERMAN)
    held = _get(admin_client, reverse("admin:audit_legalhold_changelist"), **GERMAN)
    release = _get(admin_client, reverse("admin:audit_legalhold_release", args=[hold.id]), **GERMAN)

    _speaks(
        trail,
        german=["Zugriffsprotokoll", "Kanal", "Art des Anfragenden", "MCP-Werkzeugaufruf", "Kontokennung"],
        english=["Access trail", "Channel", "Requester kind", "MCP tool call", "Account identifier"],
    )
    _speaks(
        held,
        german=["Aufbewahrungssperren", "Umfang", "Angeordnet am", "Aufgehoben am"],
        english=["Legal holds", "Scope", "Placed at", "Released at"],
    )
    _speaks(
        release,
        german=[
            "Aufbewahrungssperre aufheben",
            "Nach der Aufhebung unterliegen",
            "Sperre aufheben",
            "Konten",
        ],
        english=["Release legal hold", "Once released", "Release the hold", "Why the hold is released"],
    )
    assert "Acme v. Berlin" in release


def test_the_mcp_key_pages_and_message_in_german(admin_client, account):
    issued = create_key("agent")

    listing = _get(admin_client, reverse("admin:accounts_mcpapikey_changelist"), **GERMAN)
    page = _get(admin_client, reverse("admin:accounts_mcpapikey_change", args=[issued.record.pk]), **GERMAN)
    response = admin_client.post(
        reverse("admin:accounts_mcpapikey_changelist"),
        {"action": "revoke_keys", "_selected_action": [issued.record.pk]},
        **GERMAN,
    )

    _speaks(
        listing,
        german=[
            "MCP-API-Schlüssel",
            "Darf lesen",
            "alle Konten",
            "Ausgewählte Schlüssel widerrufen",
            "aktiv",
        ],
        english=["MCP API keys", "Reads", "every account", "Revoke selected keys"],
    )
    _speaks(
        page,
        german=["Auf die gewählten Konten beschränkt", "Client verbinden", "Präfix", "Zuletzt verwendet am"],
        english=["Limited to the accounts chosen", "Connect a client", "Prefix", "Last used at"],
    )
    assert [str(message) for message in get_messages(response.wsgi_request)] == ["1 Schlüssel widerrufen."]


def test_labels_given_without_a_migration_keep_the_english_django_derived():
    """The same English words as before (mailfathom.core.labels), in German for a German reader."""
    with translation.override("en"):
        for model, name, label in FIELD_LABELS:
            field = model._meta.get_field(name)
            declared = field._verbose_name  # type: ignore[union-attr]  # a concrete field
            assert str(label) == (declared if declared is not None else name.replace("_", " ")), (model, name)
        for model, singular, plural in MODEL_NAMES:
            options = model._meta.original_attrs
            derived = options.get("verbose_name") or camel_case_to_spaces(model.__name__)
            assert str(singular) == derived, model
            assert str(plural) == options.get("verbose_name_plural", f"{derived}s"), model
    same_in_german = {"alias", "position", "text", "name", "status", "id", "ID", "uidvalidity"}
    with translation.override("de"):
        untranslated = [
            (model.__name__, name)
            for model, name, label in FIELD_LABELS
            if str(label) == name.replace("_", " ") and name not in same_in_german
        ]
    assert not untranslated


def test_the_labels_make_no_migration():
    output = io.StringIO()
    call_command("makemigrations", "--check", "--dry-run", stdout=output)  # also exits 1 on a change
    assert output.getvalue().strip() == "No changes detected"


def _catalog_entries(po: str) -> list[tuple[str, bool]]:
    """(msgid, fuzzy) of every entry but the header and obsolete ones."""
    entries = []
    for block in po.split("\n\n"):
        if block.lstrip().startswith("#~"):
            continue
        fuzzy = any(line.startswith("#,") and "fuzzy" in line for line in block.splitlines())
        found = re.search(r'^msgid ((?:".*"\n?)+)', block, re.MULTILINE)
        if found:
            msgid = "".join(re.findall(r'"(.*)"', found.group(1)))
            if msgid:
                entries.append((msgid.encode().decode("unicode_escape").encode("latin-1").decode(), fuzzy))
    return entries


def test_the_catalog_is_whole_and_compiled():
    entries = _catalog_entries((CATALOG / "django.po").read_text(encoding="utf-8"))
    with (CATALOG / "django.mo").open("rb") as compiled:
        german = gettext.GNUTranslations(compiled)

    assert len(entries) > 400
    assert not [msgid for msgid, fuzzy in entries if fuzzy]
    compiled_ids = {key if isinstance(key, str) else key[0] for key in german._catalog}  # type: ignore[attr-defined]  # the parsed .mo
    missing = [msgid for msgid, _ in entries if msgid not in compiled_ids]
    assert not missing, missing[:5]


def test_the_key_shown_once_in_german(admin_client):
    page = admin_client.post(reverse("admin:accounts_mcpapikey_add"), {"name": "laptop"}, **GERMAN)
    page = page.content.decode()

    _speaks(
        page,
        german=[
            "MCP-API-Schlüssel erstellt",
            "Kopieren Sie ihn jetzt",
            "Client verbinden",
            ">Kopieren<",
            '"Kopiert"',  # what the Copy button says once it copied
            "Zurück zu den MCP-API-Schlüsseln",
        ],
        english=["MCP API key created", "Copy it now", "Connect a client", ">Copy<", "Back to MCP API keys"],
    )
    assert re.search(r"mfk_[A-Za-z0-9_-]{43}", page)  # the key itself, once


def test_the_draft_review_page_in_german(admin_client, email):
    draft = DraftFactory(email=email)

    page = _get(admin_client, reverse("admin:answering_draft_change", args=[draft.pk]), **GERMAN)

    _speaks(
        page,
        german=[
            "Entwurf prüfen",
            "Anliegen / Sprache",
            "Bestellung",
            "Die Antwort geht an",
            "Erstellt aus",
            "Die beantwortete E-Mail",
            'value="Genehmigen"',
            'value="Verwerfen"',
            "Zurück zur Prüfliste",
        ],
        english=["Review draft", "Intent / language", "The reply goes to", "Built from", 'value="Approve"'],
    )
    assert "thank you for your order 4711" in page  # the draft's own text stays as written


def test_case_exports_and_erasure_requests_in_german(admin_client):
    start = _get(admin_client, reverse("admin:audit_caseexport_add"), **GERMAN)
    erasures = _get(admin_client, reverse("admin:audit_erasurerequestrecord_changelist"), **GERMAN)

    _speaks(
        start,
        german=[
            "Fallexport starten",
            "Aktenzeichen",
            "Ein Fallexport schreibt",
            "Export starten",
            "Empfangen vor",
        ],
        english=["Start a case export", "Case reference", "A case export writes", "Start the export"],
    )
    _speaks(erasures, german=["Löschanträge"], english=["Erasure requests", "erasure requests"])

"""A key limited to one account reads nothing of another, through every tool, over /mcp.

The real `mcp` client against a real uvicorn; ask_mail's model is the scripted
OpenAI-compatible server doing whatever the mail it reads says (tests/answering/support.py).
Each test has a control: the same call with a key for every account does reach the other
account, so a limit that did nothing would fail the test.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from email.message import EmailMessage

import pytest

from accounts.models import MailAccount
from accounts.services.mcp_keys import create_key
from mailbox.models import Email, Folder
from mailbox.services.embedding import embed_pending
from mailbox.services.lexical_search import refresh_term_stats
from mailbox.services.store import IncomingMessage, store_messages
from mailfathom.providers import health
from tests.answering.support import ObedientModel, World, build_world
from tests.configure import configure, scripted_embeddings
from tests.mcp.answering_support import (
    answering_env,
)
from tests.mcp.conftest import call_tool, error_code, error_text, payload

pytestmark = pytest.mark.django_db(transaction=True)

QUESTION = "What did the insurer finally agree to pay?"
PRIVATE_MARKER = "PRIVATE-7731"


@pytest.fixture(scope="module")
def server(module_server_factory, scripted):
    return module_server_factory(
        **answering_env(scripted), MAILFATHOM_PUBLIC_BASE_URL="https://mail.example.org"
    )


@pytest.fixture
def model(scripted) -> ObedientModel:
    obedient = ObedientModel()
    scripted.chat.always(obedient)
    return obedient


@pytest.fixture
def world(settings, scripted, model) -> Iterator[World]:
    """Accounts `work` and `private` (with an attachment in private), embedded and indexed."""
    configure(settings, **scripted_embeddings(scripted))
    health.clear_health("chat")
    health.clear_health("embedding")
    built = build_world()
    built.private_attachment_id = _store_with_attachment(  # type: ignore[attr-defined]  # extra ids carried on the built world
        Folder.objects.get(mapping__account__account_id="private"), "payslip PRIVATE-7731", 990001
    )
    built.work_attachment_id = _store_with_attachment(  # type: ignore[attr-defined]  # extra ids carried on the built world
        Folder.objects.get(mapping__account__account_id="work", mapping__alias="inbox"), "invoice", 990002
    )
    embed_pending()
    refresh_term_stats()
    yield built
    health.clear_health("chat")


def _store_with_attachment(folder: Folder, subject: str, uid: int) -> str:
    msg = EmailMessage()
    msg["From"] = "hr@example.org"
    msg["To"] = "me@example.net"
    msg["Subject"] = subject
    msg.set_content("your payslip, attached")
    msg.add_attachment(b"%PDF-1.4 payslip", maintype="application", subtype="pdf", filename="payslip.pdf")
    raw = msg.as_bytes()
    stored = store_messages(
        folder, [IncomingMessage(uidvalidity=1, uid=uid, size=len(raw), received_at=None, raw=raw)]
    )
    return str(Email.objects.get(pk=stored.email_ids[0]).pk)


@pytest.fixture
def keys(world) -> tuple[str, str]:
    """(a key limited to `work`, a key for every account)."""
    return create_key("work only", ["work"]).key, create_key("everything").key


def _account_ids_of(result: dict, field: str = "emails") -> set[str]:
    return {item["accountId"] for item in result[field]}


def test_list_accounts_lists_only_the_keys_accounts(server, keys):
    limited, everything = keys
    assert [a["accountId"] for a in payload(call_tool(server, limited, "list_accounts"))["accounts"]] == [
        "work"
    ]
    listed = payload(call_tool(server, everything, "list_accounts"))["accounts"]
    assert [a["accountId"] for a in listed] == ["private", "work"]


def test_naming_an_account_outside_the_key_is_53001_like_an_unknown_one_in_every_tool(server, keys):
    limited, everything = keys
    calls = {
        "list_emails": {},
        "search_emails": {"queryText": "insurer payment"},
        "ask_mail": {"question": QUESTION},
    }
    for tool, arguments in calls.items():
        outside = call_tool(server, limited, tool, {**arguments, "accounts": ["private"]})
        by_display_name = call_tool(server, limited, tool, {**arguments, "accounts": ["Private"]})
        unknown = call_tool(server, limited, tool, {**arguments, "accounts": ["nobody"]})
        assert error_code(outside) == error_code(by_display_name) == error_code(unknown) == 53001, tool
        assert error_text(outside) == error_text(unknown).replace("nobody", "private"), tool
        assert not call_tool(server, everything, tool, {**arguments, "accounts": ["private"]}).is_error, tool


def test_listing_and_searching_without_accounts_read_only_the_keys_mail(server, keys):
    limited, everything = keys
    assert _account_ids_of(payload(call_tool(server, limited, "list_emails", {}))) == {"work"}
    assert _account_ids_of(payload(call_tool(server, everything, "list_emails", {}))) == {"work", "private"}

    def searched(key: str) -> set[str]:
        result = payload(call_tool(server, key, "search_emails", {"queryText": "insurer payment"}))
        return {match["summary"]["accountId"] for match in result["matches"]}

    assert searched(limited) == {"work"}
    assert "private" in searched(everything)


def test_content_and_attachment_links_of_another_account_are_53002(server, keys, world):
    limited, everything = keys
    arguments = {
        "storedEmailIds": [world.private_id, world.private_attachment_id],
        "includeAttachmentDownloadLinks": True,
    }
    refused = payload(call_tool(server, limited, "get_email_content", arguments))["emails"]
    assert [entry["failure"]["code"] for entry in refused] == [53002, 53002]
    assert all(entry["content"] is None for entry in refused)
    assert "downloadUrl" not in json.dumps(refused) and PRIVATE_MARKER not in json.dumps(refused)

    served = payload(call_tool(server, everything, "get_email_content", arguments))["emails"]
    [attachment] = served[1]["content"]["attachments"]
    assert attachment["downloadState"] == "issued"  # the control: the same call does mint a link

    arguments["storedEmailIds"] = [world.work_attachment_id]
    [work] = payload(call_tool(server, limited, "get_email_content", arguments))["emails"]
    assert work["content"]["accountId"] == "work"
    assert work["content"]["attachments"][0]["downloadState"] == "issued"


def test_ask_mail_with_a_limited_key_never_retrieves_or_cites_another_accounts_mail(
    server, keys, model, world
):
    limited, everything = keys

    answer = payload(call_tool(server, limited, "ask_mail", {"question": QUESTION}))
    assert answer["citations"]
    assert {citation["accountId"] for citation in answer["citations"]} == {"work"}
    assert PRIVATE_MARKER not in json.dumps(model.requests), "private mail reached the model"
    assert PRIVATE_MARKER not in json.dumps(answer)

    model.requests.clear()
    payload(call_tool(server, everything, "ask_mail", {"question": QUESTION}))
    assert PRIVATE_MARKER in json.dumps(model.requests)  # the control: it is there to be found


def test_a_key_limited_to_an_account_no_longer_served_reads_nothing(server, world):
    limited = create_key("private only", ["private"]).key
    MailAccount.objects.filter(account_id="private").update(served=False)
    assert payload(call_tool(server, limited, "list_accounts"))["accounts"] == []
    assert payload(call_tool(server, limited, "list_emails", {}))["emails"] == []

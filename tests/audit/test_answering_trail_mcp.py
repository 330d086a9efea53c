"""The answering audit trail, left by ask_mail called over /mcp with the real client.

The server is a real uvicorn on this session's test database; chat and embeddings are the
scripted OpenAI-compatible server, whose substitute model obeys the mail. What a run left
is read back from the database the server wrote to.
"""

from __future__ import annotations

import pytest
from django.db import connection

from accounts.models import FolderRole
from answering.instructions import INSTRUCTION_VERSION
from audit.models import AnsweringRunEmail, AnsweringRunEntry
from mailbox.models import Email
from tests.answering.support import model_writing
from tests.audit.support import keep_answering_trail, trail
from tests.factories import MailAccountFactory
from tests.mailbox.factories import mapped_folder
from tests.mcp.answering_support import (
    answering_env,
    embedding_env,
    obedient_world,
)
from tests.mcp.conftest import call_tool, error_code, payload
from tests.providers.openai_server import respond, status, tool_calls
from tests.support import scripted_openai_server

pytestmark = pytest.mark.django_db(transaction=True)

QUESTION = "What did the insurer finally agree to pay?"


@pytest.fixture(scope="module")
def scripted():
    """One scripted server for the module's uvicorn servers, which are module-scoped too."""
    with scripted_openai_server() as server:
        yield server


@pytest.fixture(scope="module")
def answering_server(module_server_factory, scripted):
    return module_server_factory(**answering_env(scripted, alias="audited-endpoint"))


@pytest.fixture(scope="module")
def failing_server(module_server_factory, scripted):
    """A server of its own: after a provider failure a server withholds answering for a minute."""
    return module_server_factory(**answering_env(scripted, alias="audited-endpoint"))


@pytest.fixture(scope="module")
def no_chat_server(module_server_factory, scripted):
    return module_server_factory(**embedding_env(scripted))


@pytest.fixture
def world(settings, scripted):
    with obedient_world(settings, scripted) as built:
        yield built


def _ask(server, key: str, **arguments) -> dict:
    return payload(call_tool(server, key, "ask_mail", {"question": QUESTION, **arguments}))


def test_a_two_account_question_leaves_one_entry_per_account_sharing_a_run_id(
    answering_server, api_key, world
):
    keep_answering_trail("work", "private")

    result = _ask(answering_server, api_key, accounts=["work", "private"])

    entries = trail()
    assert set(entries) == {"work", "private"}
    (work, work_emails), (private, private_emails) = entries["work"], entries["private"]
    assert work.run_id == private.run_id
    for account, emails in (("work", work_emails), ("private", private_emails)):
        # Its own account's mail only, in the order the run first reached it, each cited.
        reached = [c["storedEmailId"] for c in result["citations"] if c["accountId"] == account]
        assert emails == [(email_id, True) for email_id in reached]
    assert work_emails and {email_id for email_id, _ in work_emails} <= set(world.work_ids)
    assert private_emails == [(world.private_id, True)]
    for entry in (work, private):
        assert entry.outcome == "answered"
        assert entry.chat_alias == "audited-endpoint"
        assert entry.instruction_version == INSTRUCTION_VERSION
        assert entry.started_at <= entry.ended_at
        assert (entry.retrieval_ceiling_reached, entry.relevance_fell_back) == (False, False)


def test_the_entry_keeps_what_was_retrieved_what_was_cited_and_what_the_answer_relied_on(
    answering_server, api_key, world, scripted
):
    keep_answering_trail("work")
    scripted.chat.always(
        respond(model_writing(lambda shown: f"Paid [{max(shown.values())}], see [1] and [40]."))
    )

    result = _ask(answering_server, api_key, accounts=["work"])

    relied = [source["storedEmailId"] for source in result["reliedOn"]]
    assert len(relied) == 2, "the answer cited two shown sources and one forged number"
    (entry,) = AnsweringRunEntry.objects.all()
    rows = [(str(row.email_id), row.cited, row.relied_on_rank) for row in entry.emails.order_by("position")]
    assert rows == [
        (
            citation["storedEmailId"],
            True,
            relied.index(citation["storedEmailId"]) + 1 if citation["storedEmailId"] in relied else None,
        )
        for citation in result["citations"]
    ]
    assert [email_id for email_id, _, rank in sorted(rows, key=lambda r: r[2] or 0) if rank] == relied


def test_an_account_the_run_drew_nothing_from_gets_an_entry_naming_no_mail(answering_server, api_key, world):
    empty = MailAccountFactory(account_id="empty", display_name="Empty", answering_audit_enabled=True)
    mapped_folder(empty, "inbox", FolderRole.INBOX)
    keep_answering_trail("work")

    _ask(answering_server, api_key, accounts=["work", "empty"])

    entries = trail()
    assert set(entries) == {"work", "empty"}
    assert entries["empty"][1] == []
    assert entries["work"][1]
    assert entries["empty"][0].run_id == entries["work"][0].run_id


def test_an_account_with_the_trail_off_leaves_no_entry(answering_server, api_key, world):
    keep_answering_trail("work")  # private stays off, as every account is by default

    result = _ask(answering_server, api_key, accounts=["work", "private"])

    assert any(c["accountId"] == "private" for c in result["citations"]), "private mail was read"
    assert set(trail()) == {"work"}
    assert not AnsweringRunEmail.objects.filter(email_id=world.private_id).exists()


def test_deleting_an_email_removes_it_from_the_entries_that_read_it(answering_server, api_key, world):
    keep_answering_trail("work")
    _ask(answering_server, api_key, accounts=["work"])
    (entry, before) = trail()["work"]
    erased, *kept = [email_id for email_id, _ in before]

    Email.objects.filter(pk=erased).delete()

    (entry_after, after) = trail()["work"]
    assert entry_after.pk == entry.pk
    assert [email_id for email_id, _ in after] == kept


def test_a_run_failing_on_its_third_provider_call_is_recorded_with_what_it_read(
    failing_server, api_key, world, scripted
):
    keep_answering_trail("work")
    scripted.chat.script(
        tool_calls(("search_mail", {"queryText": "insurer payment"})),
        tool_calls(("search_mail", {"queryText": "lunch friday"})),
        status(500),
    )

    assert error_code(call_tool(failing_server, api_key, "ask_mail", {"question": QUESTION})) == 54001

    assert scripted.chat.pending() == 0, "all three calls were made"
    (entry, emails) = trail()["work"]
    assert entry.outcome == "provider_failed"
    assert emails, "the two lookups read mail before the third call failed"
    assert {email_id for email_id, _ in emails} <= set(world.work_ids)
    assert not any(cited for _, cited in emails), "no answer, so nothing was cited"
    assert not AnsweringRunEmail.objects.filter(relied_on_rank__isnull=False).exists()


def test_a_question_refused_before_its_run_leaves_no_entry(answering_server, no_chat_server, api_key, world):
    keep_answering_trail("work", "private")

    assert error_code(call_tool(no_chat_server, api_key, "ask_mail", {"question": QUESTION})) == 56001
    assert error_code(call_tool(answering_server, api_key, "ask_mail", {"question": "x" * 1001})) == 51002

    assert not AnsweringRunEntry.objects.exists()


def test_an_append_the_database_refuses_leaves_the_answer_intact_over_mcp(answering_server, api_key, world):
    """The append is made to fail in the server process itself: a trigger refuses the row."""
    keep_answering_trail("work")
    with connection.cursor() as cursor:
        cursor.execute(
            "CREATE FUNCTION refuse_audit_append() RETURNS trigger AS $$ "
            "BEGIN RAISE EXCEPTION 'append refused by the test'; END $$ LANGUAGE plpgsql"
        )
        cursor.execute(
            "CREATE TRIGGER refuse_audit_append BEFORE INSERT ON audit_answeringrunentry "
            "FOR EACH ROW EXECUTE FUNCTION refuse_audit_append()"
        )
    try:
        result = _ask(answering_server, api_key, accounts=["work"])
    finally:
        with connection.cursor() as cursor:
            cursor.execute("DROP TRIGGER refuse_audit_append ON audit_answeringrunentry")
            cursor.execute("DROP FUNCTION refuse_audit_append()")

    assert result["answer"] and result["citations"]  # answered, cited, as if nothing happened
    assert trail() == {}
    warned = [line for line in answering_server.log().splitlines() if "could not be appended" in line]
    assert warned and QUESTION not in answering_server.log()

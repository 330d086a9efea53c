"""Trail routes: filters select exactly their entries, newest first; cursors bound; exports equal lists."""

from __future__ import annotations

import csv
import io
import json
import uuid
from datetime import UTC, datetime, timedelta

import pytest

from accounts.models import MailAccount
from audit.models import (
    AnsweringRunEmail,
    AnsweringRunEntry,
    MutationEntry,
    MutationKind,
    MutationOutcome,
    RequesterKind,
    RunOutcome,
)
from tests.audit.support import person
from tests.factories import MailAccountFactory
from tests.mailbox.factories import EmailFactory

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fresh_rate_counts")]

T0 = datetime(2025, 6, 1, 12, 0, tzinfo=UTC)


@pytest.fixture
def reader(client):
    client.force_login(person("officer", "view_audit", "export_audit"))
    return client


def entry(account, ended_minutes: int, *, run=None, outcome=RunOutcome.ANSWERED, emails=(), **flags):
    """An answering entry ending T0 + ended_minutes, reading `emails` in order.

    Each is (email, cited) or (email, cited, relied-on rank).
    """
    ended = T0 + timedelta(minutes=ended_minutes)
    made = AnsweringRunEntry.objects.create(
        run_id=run or uuid.uuid4(),
        account=account,
        chat_alias="default",
        instruction_version="v3",
        started_at=ended - timedelta(seconds=20),
        ended_at=ended,
        outcome=outcome,
        **flags,
    )
    for position, (email, cited, *rank) in enumerate(emails):
        AnsweringRunEmail.objects.create(
            entry=made, email=email, position=position, cited=cited, relied_on_rank=rank[0] if rank else None
        )
    return made


@pytest.fixture
def answering():
    """billing and support; run A reads both, B billing (failed, degraded), C support, D billing."""
    billing = MailAccountFactory(account_id="billing")
    support = MailAccountFactory(account_id="support")
    mails = [EmailFactory(account=billing) for _ in range(3)] + [EmailFactory(account=support)]
    run_a = uuid.uuid4()
    return {
        "a_billing": entry(billing, 0, run=run_a, emails=[(mails[2], True), (mails[0], False)]),
        "a_support": entry(support, 0, run=run_a, emails=[(mails[3], True)]),
        "b": entry(
            billing,
            10,
            outcome=RunOutcome.PROVIDER_FAILED,
            emails=[(mails[0], False)],
            retrieval_ceiling_reached=True,
        ),
        "c": entry(support, 20, relevance_fell_back=True),
        "d": entry(billing, 30, emails=[(mails[1], True)]),
        "mails": mails,
    }


def every_page(client, route: str, query: str = "", size: int = 2) -> list[dict]:
    """Every row of a list route, read page by page with its cursor."""
    found, cursor = [], None
    while True:
        suffix = f"&cursor={cursor}" if cursor else ""
        response = client.get(f"{route}?page_size={size}{query}{suffix}")
        assert response.status_code == 200, response.content
        body = response.json()
        assert len(body["results"]) <= size
        found += body["results"]
        cursor = body["nextCursor"]
        if cursor is None:
            return found


def keys_of(rows: list[dict]) -> list[tuple[str, str]]:
    return [(row["runId"], row["accountId"]) for row in rows]


def keys(*entries: AnsweringRunEntry) -> list[tuple[str, str]]:
    return [(str(e.run_id), e.account.account_id) for e in entries]


# --- Answering trail: list ---------------------------------------------------------------------


def test_answering_runs_are_listed_newest_end_first_with_their_emails_in_reading_order(reader, answering):
    rows = every_page(reader, "/api/answering-runs/")

    a = answering
    assert keys_of(rows) == keys(a["d"], a["c"], a["b"], a["a_support"], a["a_billing"])
    first_of_a = rows[-1]
    mails = a["mails"]
    assert first_of_a["emails"] == [
        {"id": str(mails[2].pk), "cited": True, "reliedOn": False, "reliedOnRank": None},
        {"id": str(mails[0].pk), "cited": False, "reliedOn": False, "reliedOnRank": None},
    ]
    assert set(first_of_a) == {
        "runId",
        "accountId",
        "startedAt",
        "endedAt",
        "chatAlias",
        "instructionVersion",
        "outcome",
        "degradations",
        "emails",
    }
    assert (first_of_a["chatAlias"], first_of_a["instructionVersion"]) == ("default", "v3")
    assert (
        rows[2]["degradations"] == ["retrieval_ceiling_reached"] and rows[2]["outcome"] == "provider_failed"
    )
    assert rows[1]["degradations"] == ["relevance_fell_back"] and rows[0]["degradations"] == []


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("&account=billing", ["d", "b", "a_billing"]),
        ("&account=nobody", []),
        ("&from=2025-06-01T12:10:00Z", ["d", "c", "b"]),
        ("&before=2025-06-01T12:10:00Z", ["a_support", "a_billing"]),
        ("&from=2025-06-01T12:05:00Z&before=2025-06-01T12:30:00Z", ["c", "b"]),
        ("&outcome=provider_failed", ["b"]),
        ("&account=support&outcome=answered", ["c", "a_support"]),
    ],
)
def test_answering_filters_select_exactly_their_entries(reader, answering, query, expected):
    rows = every_page(reader, "/api/answering-runs/", query)

    assert keys_of(rows) == keys(*(answering[name] for name in expected))


def test_run_filter_selects_every_account_entry_of_that_run(reader, answering):
    run = answering["a_billing"].run_id

    rows = every_page(reader, "/api/answering-runs/", f"&run={run}")

    assert sorted(keys_of(rows)) == sorted(keys(answering["a_billing"], answering["a_support"]))


def test_a_run_filter_no_entry_has_selects_nothing_even_the_all_zero_uuid(reader, answering):
    for run in (uuid.uuid4(), uuid.UUID(int=0)):
        assert every_page(reader, "/api/answering-runs/", f"&run={run}") == []


@pytest.mark.parametrize("run", ["not-a-run", "00000000-0000-0000-0000-000000000000", "6" * 65])
def test_a_run_page_for_an_id_no_entry_has_is_404(reader, answering, run):
    response = reader.get(f"/api/answering-runs/{run}/")

    assert response.status_code == 404 and response.json()["code"] == "not_found"


def test_email_filter_selects_the_runs_that_read_it_with_all_their_emails(reader, answering):
    read_twice = answering["mails"][0]

    rows = every_page(reader, "/api/answering-runs/", f"&email={read_twice.pk}")

    assert keys_of(rows) == keys(answering["b"], answering["a_billing"])
    assert len(rows[1]["emails"]) == 2  # the entry is whole, not cut down to the email filtered on


@pytest.mark.parametrize(
    ("query", "argument"),
    [
        ("outcome=won", "outcome"),
        ("from=yesterday", "from"),
        ("from=2025-06-01T12:00:00", "from"),  # no offset: ambiguous
        ("before=2025-06-01T12:00:00Z&from=2025-06-01T12:00:00Z", "before"),
        ("run=not-a-run", "run"),
        ("run=urn:uuid:6f1c1b0e-0000-4000-8000-000000000000", "run"),
        ("run=" + "6" * 65, "run"),
        ("email=12", "email"),
        ("account=" + "x" * 201, "account"),
    ],
)
def test_unusable_answering_filter_is_refused_with_51002_naming_the_argument_not_the_value(
    reader, query, argument
):
    response = reader.get(f"/api/answering-runs/?{query}")

    assert response.status_code == 400
    body = response.json()
    assert (body["code"], body["argument"]) == (51002, argument)
    assert query.split("=")[1].split("&")[0] not in body["detail"]


def test_pages_read_every_entry_once_when_end_times_tie(reader):
    account = MailAccountFactory(account_id="billing")
    made = [entry(account, minute // 3) for minute in range(10)]  # three entries share each end time

    rows = every_page(reader, "/api/answering-runs/", size=3)

    expected = sorted(made, key=lambda e: (e.ended_at, e.pk), reverse=True)
    assert keys_of(rows) == keys(*expected)


def _first_cursor(client, route: str, query: str = "") -> str:
    cursor = client.get(f"{route}?page_size=1{query}").json()["nextCursor"]
    assert cursor
    return cursor


def test_cursor_sent_with_other_filters_is_refused_with_52002(reader, answering):
    cursor = _first_cursor(reader, "/api/answering-runs/", "&account=billing")

    response = reader.get(f"/api/answering-runs/?account=support&cursor={cursor}")

    assert response.status_code == 400
    assert (response.json()["code"], response.json()["argument"]) == (52002, "cursor")
    # The same cursor with its own filters reads on (and a page size of its own).
    assert reader.get(f"/api/answering-runs/?account=billing&page_size=5&cursor={cursor}").status_code == 200


def test_cursor_of_the_answering_trail_sent_to_the_mutation_trail_is_refused_with_52002(reader, answering):
    cursor = _first_cursor(reader, "/api/answering-runs/")

    response = reader.get(f"/api/mutations/?cursor={cursor}")

    assert response.status_code == 400 and response.json()["code"] == 52002


def test_edited_cursor_is_refused_with_52001(reader, answering):
    cursor = _first_cursor(reader, "/api/answering-runs/")
    edited = cursor[:-2] + ("AA" if not cursor.endswith("AA") else "BB")

    response = reader.get(f"/api/answering-runs/?cursor={edited}")

    assert response.status_code == 400 and response.json()["code"] == 52001


# --- Answering trail: one run ------------------------------------------------------------------


def test_one_run_answers_the_entry_of_every_account_it_read(reader, answering):
    run = answering["a_billing"].run_id

    response = reader.get(f"/api/answering-runs/{run}/")

    assert response.status_code == 200
    body = response.json()
    assert body["runId"] == str(run)
    assert [row["accountId"] for row in body["entries"]] == ["billing", "support"]
    assert [e["cited"] for e in body["entries"][0]["emails"]] == [True, False]


@pytest.mark.parametrize(
    "run_id", [pytest.param(str(uuid.uuid4()), id="unknown-uuid"), "not-a-run", "x" * 100]
)
def test_unknown_run_id_is_404_with_the_error_body(reader, answering, run_id):
    response = reader.get(f"/api/answering-runs/{run_id}/")

    assert response.status_code == 404
    assert response.json()["code"] == "not_found"
    assert run_id not in response.json()["detail"]


# --- Mutation trail ----------------------------------------------------------------------------


def mutation(account: MailAccount, minutes: int, *, kind=MutationKind.ERASURE_EXECUTED, requester="officer"):
    requested = T0 + timedelta(minutes=minutes)
    return MutationEntry.objects.create(
        kind=kind,
        requester=requester,
        requester_kind=RequesterKind.USER,
        account=account,
        account_identifier=account.account_id,
        requested_at=requested,
        completed_at=requested + timedelta(seconds=3),
        outcome=MutationOutcome.PERFORMED,
        counts={"emails": minutes},
        retention_days=90,
    )


@pytest.fixture
def mutations():
    billing = MailAccountFactory(account_id="billing")
    gone = MailAccountFactory(account_id="gone")
    made = {
        "m0": mutation(billing, 0),
        "m1": mutation(gone, 5, kind=MutationKind.ACCOUNT_MAIL_DELETED, requester="cleanup-task"),
        "m2": mutation(billing, 10, kind=MutationKind.DRAFT_APPENDED, requester="drafts-token"),
        "m3": mutation(billing, 15),
    }
    gone.delete()  # its entry keeps the identifier, with no account
    return made


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("", ["m3", "m2", "m1", "m0"]),
        ("&account=billing", ["m3", "m2", "m0"]),
        ("&account=gone", ["m1"]),
        ("&kind=erasure_executed", ["m3", "m0"]),
        ("&requester=drafts-token", ["m2"]),
        ("&from=2025-06-01T12:05:00Z&before=2025-06-01T12:15:00Z", ["m2", "m1"]),
        ("&account=billing&kind=draft_appended", ["m2"]),
    ],
)
def test_mutation_filters_select_exactly_their_entries_newest_request_first(
    reader, mutations, query, expected
):
    rows = every_page(reader, "/api/mutations/", query)

    assert [row["id"] for row in rows] == [mutations[name].pk for name in expected]


def test_mutation_entry_of_a_deleted_account_is_listed_by_its_recorded_identifier(reader, mutations):
    (row,) = every_page(reader, "/api/mutations/", "&account=gone")

    assert (row["accountId"], row["kind"], row["requester"]) == (
        "gone",
        "account_mail_deleted",
        "cleanup-task",
    )
    assert row["counts"] == {"emails": 5} and row["requestedAt"].startswith("2025-06-01T12:05:00")


@pytest.mark.parametrize(("query", "argument"), [("kind=burn", "kind"), ("before=soon", "before")])
def test_unusable_mutation_filter_is_refused_with_51002(reader, query, argument):
    response = reader.get(f"/api/mutations/?{query}")

    assert response.status_code == 400
    assert (response.json()["code"], response.json()["argument"]) == (51002, argument)


# --- Exports -----------------------------------------------------------------------------------


def jsonl(response) -> list[dict]:
    assert response.status_code == 200
    text = b"".join(response.streaming_content).decode()
    return [json.loads(line) for line in text.splitlines()]


def csv_rows(response) -> list[dict]:
    assert response.status_code == 200
    return list(csv.DictReader(io.StringIO(b"".join(response.streaming_content).decode())))


@pytest.mark.parametrize("query", ["", "&account=billing", "&from=2025-06-01T12:10:00Z", "&outcome=answered"])
def test_answering_export_rows_equal_the_filtered_list(reader, answering, query):
    listed = every_page(reader, "/api/answering-runs/", query)

    exported = jsonl(reader.get(f"/api/answering-runs/export/?format=jsonl{query}"))
    as_csv = csv_rows(reader.get(f"/api/answering-runs/export/?format=csv{query}"))

    assert [(row["runId"], row["accountId"]) for row in exported] == keys_of(listed)
    assert [(row["runId"], row["accountId"]) for row in as_csv] == keys_of(listed)
    for row, item in zip(exported, listed, strict=True):
        assert row["emailIds"].split() == [email["id"] for email in item["emails"]]
        assert row["citedEmailIds"].split() == [email["id"] for email in item["emails"] if email["cited"]]
        relied = sorted((e["reliedOnRank"], e["id"]) for e in item["emails"] if e["reliedOn"])
        assert row["reliedOnEmailIds"].split() == [email_id for _rank, email_id in relied]
        assert row["retrievalCeilingReached"] == ("retrieval_ceiling_reached" in item["degradations"])


def test_relied_on_emails_are_listed_with_their_rank_and_exported_in_first_mention_order(reader):
    account = MailAccountFactory(account_id="billing")
    first, second, third = (EmailFactory(account=account) for _ in range(3))
    # Reached first, second, third; the answer cited the third source before the first.
    entry(account, 0, emails=[(first, True, 2), (second, True), (third, True, 1)])

    (item,) = every_page(reader, "/api/answering-runs/")
    (row,) = jsonl(reader.get("/api/answering-runs/export/?format=jsonl"))
    (csv_row,) = csv_rows(reader.get("/api/answering-runs/export/?format=csv"))

    assert [(e["id"], e["cited"], e["reliedOn"], e["reliedOnRank"]) for e in item["emails"]] == [
        (str(first.pk), True, True, 2),
        (str(second.pk), True, False, None),
        (str(third.pk), True, True, 1),
    ]
    assert row["reliedOnEmailIds"] == csv_row["reliedOnEmailIds"] == f"{third.pk} {first.pk}"
    assert row["citedEmailIds"].split() == [str(first.pk), str(second.pk), str(third.pk)]


def test_answering_export_filtered_on_an_email_keeps_every_email_of_each_entry(reader, answering):
    read_twice = answering["mails"][0]

    exported = jsonl(reader.get(f"/api/answering-runs/export/?email={read_twice.pk}"))

    assert [(row["runId"], row["accountId"]) for row in exported] == keys(
        answering["b"], answering["a_billing"]
    )
    assert len(exported[1]["emailIds"].split()) == 2


@pytest.mark.parametrize("query", ["", "&account=gone", "&kind=erasure_executed&before=2025-06-01T12:10:00Z"])
def test_mutation_export_rows_equal_the_filtered_list(reader, mutations, query):
    listed = every_page(reader, "/api/mutations/", query)

    exported = jsonl(reader.get(f"/api/mutations/export/?format=jsonl{query}"))
    as_csv = csv_rows(reader.get(f"/api/mutations/export/?format=csv{query}"))

    assert [row["id"] for row in exported] == [row["id"] for row in listed]
    assert [int(row["id"]) for row in as_csv] == [row["id"] for row in listed]
    assert [row["counts"] for row in exported] == [row["counts"] for row in listed]
    assert [json.loads(row["counts"]) for row in as_csv] == [row["counts"] for row in listed]
    assert [row["accountId"] for row in exported] == [row["accountId"] for row in listed]


def test_export_refuses_an_unusable_filter_with_51002_before_streaming(reader):
    response = reader.get("/api/mutations/export/?kind=burn")

    assert response.status_code == 400 and response.json()["code"] == 51002

"""GET /api/trails/verify/ and the chain head on trail exports: same credentials as the trail routes."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.db import connection
from django.test import Client
from django.utils import timezone

from audit import api_tokens as tokens
from audit.models import MutationEntry, MutationKind, MutationOutcome, RequesterKind
from audit.services import chain
from audit.services.mutations import Mutation, record_mutation
from tests.audit.support import person
from tests.factories import MailAccountFactory

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fresh_rate_counts")]


@pytest.fixture
def acts():
    account = MailAccountFactory(account_id="billing", mutation_audit_enabled=True)
    for minutes in (30, 20, 10):
        record_mutation(
            Mutation(
                kind=MutationKind.DRAFT_APPENDED,
                requester="officer",
                requester_kind=RequesterKind.USER,
                account_pk=account.pk,
                requested_at=timezone.now() - timedelta(minutes=minutes),
                outcome=MutationOutcome.PERFORMED,
            )
        )
    return list(MutationEntry.objects.order_by("pk"))


def viewer(*codenames: str) -> Client:
    client = Client()
    client.force_login(person(f"officer-{'-'.join(codenames) or 'none'}", *codenames))
    return client


def by_trail(body: dict) -> dict[str, dict]:
    return {row["trail"]: row for row in body["trails"]}


def test_an_authorized_person_reads_every_trail_ok_with_its_head_and_count(acts):
    response = viewer("view_audit").get("/api/trails/verify/")

    assert response.status_code == 200
    body = response.json()
    assert body["ok"] is True
    mutation = by_trail(body)["mutation"]
    head_seq, head_hash = chain.head("mutation")
    assert mutation == {
        "trail": "mutation",
        "ok": True,
        "entries": 3,
        "links": 3,
        "head": {"seq": head_seq, "chainHash": head_hash},
        "checkpointSeq": 0,
        "breaks": 0,
        "firstBreak": None,
    }
    assert {"answering", "erasure"} <= set(by_trail(body))


def test_a_row_edited_by_sql_is_reported_as_the_first_break(acts):
    edited = acts[1]
    with connection.cursor() as cursor:
        cursor.execute("UPDATE audit_mutationentry SET folder_alias = 'elsewhere' WHERE id = %s", [edited.pk])

    body = viewer("view_audit").get("/api/trails/verify/?trail=mutation").json()

    assert body["ok"] is False
    (mutation,) = body["trails"]
    assert mutation["firstBreak"] == {"seq": 2, "entry": str(edited.pk), "reason": "content_changed"}
    assert mutation["breaks"] == 1


def test_a_token_holding_view_audit_is_answered_and_others_are_refused(acts):
    owner = person("owner", every_audit_permission=True)
    allowed = tokens.create_token(owner, "verifier", ["view_audit"]).secret
    export_only = tokens.create_token(owner, "exporter", ["export_audit"]).secret

    assert Client().get("/api/trails/verify/", HTTP_AUTHORIZATION=f"Bearer {allowed}").status_code == 200
    assert Client().get("/api/trails/verify/", HTTP_AUTHORIZATION=f"Bearer {export_only}").status_code == 403
    assert Client().get("/api/trails/verify/").status_code == 401
    assert viewer().get("/api/trails/verify/").status_code == 403
    assert viewer("export_audit").get("/api/trails/verify/").status_code == 403


@pytest.mark.parametrize("query", ["trail=nonsense", "at=2", "trail=mutation&at=two"])
def test_an_unusable_argument_is_refused_with_51002(acts, query):
    response = viewer("view_audit").get(f"/api/trails/verify/?{query}")

    assert response.status_code == 400
    assert response.json()["code"] == 51002


def test_an_export_carries_the_chain_head_and_count_and_a_saved_head_checks_against_the_live_chain(acts):
    client = viewer("view_audit", "export_audit")
    head_seq, head_hash = chain.head("mutation")

    response = client.get("/api/mutations/export/?format=csv")

    assert response["X-MailFathom-Chain-Trail"] == "mutation"
    assert response["X-MailFathom-Chain-Head"] == f"{head_seq}:{head_hash}"
    assert response["X-MailFathom-Chain-Count"] == "3"
    saved_as = re.search(r'filename="([^"]+)"', response["Content-Disposition"]).group(1)
    assert saved_as == f"mutation-trail.chain-{head_seq}-{head_hash}.csv"
    b"".join(response.streaming_content)

    # Later: the head named in the saved file's name, against the live chain.
    seq, digest = re.fullmatch(r"mutation-trail\.chain-(\d+)-([0-9a-f]{64})\.csv", saved_as).groups()
    body = client.get(f"/api/trails/verify/?trail=mutation&at={seq}").json()
    assert body["linkAt"] == {"seq": int(seq), "held": True, "chainHash": digest}
    assert body["ok"] is True

    answering = client.get("/api/answering-runs/export/?format=jsonl")
    assert answering["X-MailFathom-Chain-Trail"] == "answering"
    assert answering["X-MailFathom-Chain-Head"] == "0:" and answering["X-MailFathom-Chain-Count"] == "0"

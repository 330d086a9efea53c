"""Streaming export: CSV or JSON Lines chosen by ?format or Accept, every row once, in constant memory."""

from __future__ import annotations

import csv
import io
import json
import tracemalloc
from pathlib import Path

import pytest
from asgiref.sync import async_to_sync
from django.contrib.auth import get_user_model
from django.core.handlers.asgi import ASGIRequest
from django.db import connection

from audit import api_tokens as tokens
from audit.api import export
from audit.api.views import TOKEN_EXPORT
from audit.api_tokens import ApiToken
from tests.audit.support import person

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fresh_rate_counts")]

ROWS = 100_000
# The bound asked for is 50 MB; 10 MB is low enough that an export holding the rows (read
# with list() instead of .iterator()) fails this test, and far above what streaming needs.
MEMORY_CEILING = 10 * 1024 * 1024


@pytest.fixture
def exporter(client):
    user = person("ines", every_audit_permission=True)
    client.force_login(user)
    return client, user


def body(response) -> str:
    assert response.streaming
    return b"".join(response.streaming_content).decode()


def test_csv_by_query_parameter_has_the_fixed_columns_and_every_row(exporter):
    client, user = exporter
    made = [tokens.create_token(user, f"token {index}", ["view_audit"]).record for index in range(3)]
    tokens.revoke(made[0].pk)
    response = client.get("/api/tokens/export/?format=csv")
    assert response.status_code == 200
    assert response["Content-Type"] == "text/csv; charset=utf-8"
    assert response["Content-Disposition"] == 'attachment; filename="api-tokens.csv"'
    assert response["Cache-Control"] == "no-store"
    table = list(csv.reader(io.StringIO(body(response))))
    assert table[0] == ["id", "name", "prefix", "createdAt", "lastUsedAt", "revokedAt"]
    assert {(int(row[0]), row[1]) for row in table[1:]} == {(token.pk, token.name) for token in made}
    revoked = next(row for row in table[1:] if int(row[0]) == made[0].pk)
    assert revoked[5] != "" and revoked[4] == ""


def test_jsonl_by_accept_header_and_by_default(exporter):
    client, user = exporter
    made = tokens.create_token(user, "one", ["view_audit"]).record
    for headers in ({"HTTP_ACCEPT": "application/x-ndjson"}, {}):
        response = client.get("/api/tokens/export/", **headers)
        assert response["Content-Type"] == "application/jsonl; charset=utf-8"
        lines = [json.loads(line) for line in body(response).splitlines()]
        assert lines == [
            {
                "id": made.pk,
                "name": "one",
                "prefix": made.prefix,
                "createdAt": made.created_at.isoformat(),
                "lastUsedAt": None,
                "revokedAt": None,
            }
        ]
    assert client.get("/api/tokens/export/", HTTP_ACCEPT="text/csv")["Content-Type"].startswith("text/csv")


def test_unknown_format_is_refused_with_51002_in_json(exporter):
    client, _ = exporter
    response = client.get("/api/tokens/export/?format=xlsx")
    assert response.status_code == 400
    assert response.json() == {
        "code": 51002,
        "detail": "The format argument must be csv or jsonl.",
        "argument": "format",
    }


def test_csv_cells_a_spreadsheet_would_run_are_quoted_as_text(exporter):
    client, user = exporter
    tokens.create_token(user, "=HYPERLINK(1)", ["view_audit"])
    tokens.create_token(user, "-2+3", ["view_audit"])
    names = {
        row[1]
        for row in list(csv.reader(io.StringIO(body(client.get("/api/tokens/export/?format=csv")))))[1:]
    }
    assert names == {"'=HYPERLINK(1)", "'-2+3"}
    lines = body(client.get("/api/tokens/export/?format=jsonl")).splitlines()
    assert {json.loads(line)["name"] for line in lines} == {"=HYPERLINK(1)", "-2+3"}


def test_a_formula_after_a_list_separator_is_neutralised_too(exporter):
    client, user = exporter
    tokens.create_token(user, "probe;=1+1", ["view_audit"])
    tokens.create_token(user, 'a, "@SUM(A1)', ["view_audit"])
    tokens.create_token(user, "plain; words", ["view_audit"])
    names = {
        row[1]
        for row in list(csv.reader(io.StringIO(body(client.get("/api/tokens/export/?format=csv")))))[1:]
    }
    assert names == {"probe;'=1+1", "a, \"'@SUM(A1)", "plain; words"}
    # Read with `;` as the list separator, as a German spreadsheet would: no cell starts a formula.
    text = body(client.get("/api/tokens/export/?format=csv"))
    cells = [cell.strip(' "') for line in text.splitlines() for cell in line.replace(",", ";").split(";")]
    assert not [cell for cell in cells if cell.startswith(("=", "+", "-", "@"))]


def test_csv_writes_booleans_as_json_does_and_a_bom_on_request():
    assert export._csv_cell(True) == "true" and export._csv_cell(False) == "false"
    spec = export.ExportSpec(name="x", columns=("flag",))
    plain = "".join(export.blocks(spec, "csv", [(True,), (False,)]))
    assert plain == "flag\r\ntrue\r\nfalse\r\n"
    marked = "".join(export.blocks(spec, "csv", [(True,)], bom=True))
    assert marked.startswith("\ufeffflag\r\n")
    assert "".join(export.blocks(spec, "jsonl", [(True,)], bom=True)) == '{"flag":true}\n'


def test_the_bom_is_asked_for_by_a_query_parameter(exporter):
    client, user = exporter
    tokens.create_token(user, "one", ["view_audit"])
    assert body(client.get("/api/tokens/export/?format=csv&bom=1")).startswith("\ufeff")
    assert not body(client.get("/api/tokens/export/?format=csv")).startswith("\ufeff")


def test_export_through_django_asgi_handler_streams_every_row(exporter):
    # AsyncClient goes through ASGIHandler, as uvicorn does: the body is the async branch.
    from django.test import AsyncClient

    _, user = exporter
    made = {tokens.create_token(user, f"token {index}", ["export_audit"]).record.pk for index in range(5)}
    secret = tokens.create_token(user, "script", ["export_audit"]).secret

    @async_to_sync
    async def fetch():
        response = await AsyncClient().get(
            "/api/tokens/export/?format=jsonl", headers={"Authorization": f"Bearer {secret}"}
        )
        assert response.status_code == 200
        assert response.is_async
        return b"".join([block async for block in response.streaming_content]).decode()

    exported = {json.loads(line)["id"] for line in fetch().splitlines()}
    assert exported == made | {ApiToken.objects.get(name="script").pk}


def _insert_rows(count: int) -> None:
    user = get_user_model().objects.create_user(username="bulk", password="x")
    with connection.cursor() as cursor:
        cursor.execute(
            """
            INSERT INTO audit_apitoken (name, prefix, token_hash, created_by_id, created_at)
            SELECT 'token ' || n, 'mfa_' || n, lpad(n::text, 64, '0'), %s, now() - n * interval '1 second'
            FROM generate_series(1, %s) AS n
            """,
            [user.pk, count],
        )


def _drain_sync(response, sink) -> None:
    assert not response.is_async
    for block in response.streaming_content:
        sink.write(block)


@async_to_sync
async def _drain_async(response, sink) -> None:
    assert response.is_async  # the ASGI branch: Django would list a sync iterator whole
    async for block in response:
        sink.write(block)


def _asgi_request() -> ASGIRequest:
    scope = {
        "type": "http",
        "method": "GET",
        "path": "/api/tokens/export/",
        "headers": [],
        "query_string": b"",
    }
    return ASGIRequest(scope, io.BytesIO())


# Each format once and each server branch once: a run takes about 25 s under tracemalloc.
@pytest.mark.slow
@pytest.mark.parametrize(("fmt", "server"), [("csv", "wsgi"), ("jsonl", "asgi")])
def test_export_of_100000_rows_stays_under_50_mb_and_holds_exactly_the_rows(tmp_path: Path, rf, fmt, server):
    _insert_rows(ROWS)
    queryset = ApiToken.objects.order_by("id")
    out = tmp_path / f"export.{fmt}"
    with out.open("wb") as sink:
        tracemalloc.start()
        try:
            baseline = tracemalloc.get_traced_memory()[0]
            if server == "wsgi":
                _drain_sync(export.stream(rf.get("/"), queryset, TOKEN_EXPORT, fmt), sink)
            else:
                _drain_async(export.stream(_asgi_request(), queryset, TOKEN_EXPORT, fmt), sink)
            peak = tracemalloc.get_traced_memory()[1] - baseline
        finally:
            tracemalloc.stop()
    print(f"{fmt}/{server}: peak growth {peak / 1e6:.1f} MB")
    assert peak < MEMORY_CEILING, f"peak growth {peak / 1e6:.1f} MB"
    with out.open(encoding="utf-8", newline="") as written:
        if fmt == "csv":
            reader = csv.reader(written)
            next(reader)
            exported = {(int(row[0]), row[1]) for row in reader}
        else:
            exported = {(record["id"], record["name"]) for record in map(json.loads, written)}
    assert len(exported) == ROWS
    assert exported == set(ApiToken.objects.values_list("id", "name"))

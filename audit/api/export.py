"""Streaming exports: any queryset as CSV or JSON Lines, in constant memory.

An export names its columns once (ExportSpec); rows are read from a server-side cursor and
sent as they come, so neither the rows nor the output are ever held whole. Formats and the
CSV quoting rules: docs/operations/compliance-api.md, Export.
"""

from __future__ import annotations

import csv
import json
import re
from collections.abc import AsyncIterator, Iterable, Iterator
from dataclasses import dataclass
from datetime import date, datetime
from typing import Any

from asgiref.sync import sync_to_async
from django.conf import settings
from django.core.handlers.asgi import ASGIRequest
from django.db.models import QuerySet
from django.http import HttpRequest, StreamingHttpResponse

from mailfathom.core.errors import FILTER_REFUSED, MailFathomError
from mailfathom.core.wire import wire_name

FORMATS = {"csv": "text/csv; charset=utf-8", "jsonl": "application/jsonl; charset=utf-8"}
# Accept header media types that ask for each format (the first match in the header wins).
ACCEPTED = {
    "text/csv": "csv",
    "application/jsonl": "jsonl",
    "application/x-ndjson": "jsonl",
    "application/x-jsonlines": "jsonl",
}
DEFAULT_FORMAT = "jsonl"
BLOCK_CHARACTERS = 64 * 1024  # rows are sent in blocks about this size, not one write per row
# A spreadsheet runs a cell starting with one of these as a formula: such a cell gets an apostrophe.
_FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
# A formula character after a list separator (some spreadsheets split cells on `;` or `|`).
_FORMULA_AFTER_SEPARATOR = re.compile(r"([,;\t|][ \"']*)([=+\-@])")
BOM = "\ufeff"


@dataclass(frozen=True)
class ExportSpec:
    """One export: its file name and its fixed column list (field lookups of the queryset).

    The header (CSV) and keys (JSON Lines) are the lookups in camelCase, the API's wire
    names, unless `renamed` names them otherwise.
    """

    name: str
    columns: tuple[str, ...]
    # Wire names where the camelCased lookup is not the API's name (account__account_id: accountId).
    renamed: tuple[tuple[str, str], ...] = ()

    @property
    def headers(self) -> tuple[str, ...]:
        names = dict(self.renamed)
        return tuple(names.get(column, wire_name(column)) for column in self.columns)


def requested_format(request: HttpRequest) -> str:
    """`?format=csv|jsonl`, else the Accept header, else JSON Lines; any other format is 51002."""
    asked = request.GET.get("format")
    if asked is not None:
        if asked not in FORMATS:
            raise MailFathomError(
                FILTER_REFUSED, "The format argument must be csv or jsonl.", argument="format"
            )
        return asked
    for part in request.headers.get("Accept", "").split(","):
        media_type = part.split(";")[0].strip().lower()
        if media_type in ACCEPTED:
            return ACCEPTED[media_type]
    return DEFAULT_FORMAT


def rows(
    queryset: QuerySet[Any], spec: ExportSpec, chunk_rows: int | None = None
) -> Iterator[tuple[Any, ...]]:
    """The queryset's rows as tuples in column order, read chunk by chunk from a server-side cursor."""
    chunk = chunk_rows or settings.MAILFATHOM.api_export_chunk_rows
    return queryset.values_list(*spec.columns).iterator(chunk_size=chunk)


def blocks(
    spec: ExportSpec, fmt: str, records: Iterable[tuple[Any, ...]], *, bom: bool = False
) -> Iterator[str]:
    """The export's text in blocks of about BLOCK_CHARACTERS: CSV with a header, or JSON Lines.

    `bom` starts a CSV with a byte-order mark (JSON Lines never has one).
    """
    lines = _csv_lines(spec, records) if fmt == "csv" else _jsonl_lines(spec, records)
    pending: list[str] = [BOM] if bom and fmt == "csv" else []
    size = len(pending)
    for line in lines:
        pending.append(line)
        size += len(line)
        if size >= BLOCK_CHARACTERS:
            yield "".join(pending)
            pending, size = [], 0
    if pending:
        yield "".join(pending)


def stream(
    request: HttpRequest, queryset: QuerySet[Any], spec: ExportSpec, fmt: str
) -> StreamingHttpResponse:
    """A response streaming `queryset` as `fmt`: async under ASGI, sync otherwise; constant memory."""
    text = blocks(spec, fmt, rows(queryset, spec), bom=request.GET.get("bom") in ("1", "true"))
    # Under ASGI Django reads a sync iterator whole into a list before sending it: hand it an async one.
    content: Iterator[str] | AsyncIterator[str] = _async(text) if isinstance(request, ASGIRequest) else text
    response = StreamingHttpResponse(content, content_type=FORMATS[fmt])
    response["Content-Disposition"] = f'attachment; filename="{spec.name}.{fmt}"'
    response["Cache-Control"] = "no-store"
    response["X-Content-Type-Options"] = "nosniff"
    return response


def _next_block(text: Iterator[str]) -> str | None:
    return next(text, None)


async def _async(text: Iterator[str]) -> AsyncIterator[str]:
    # Thread-sensitive: every step runs on the one thread holding the request's connection,
    # which is where the server-side cursor lives.
    step = sync_to_async(_next_block, thread_sensitive=True)
    while True:
        block = await step(text)
        if block is None:
            return
        yield block


class _Line:
    """A file-like object for csv.writer that hands back what it is given."""

    def write(self, text: str) -> str:
        return text


def _csv_lines(spec: ExportSpec, records: Iterable[tuple[Any, ...]]) -> Iterator[str]:
    writer = csv.writer(_Line())
    yield writer.writerow(spec.headers)
    for record in records:
        yield writer.writerow([_csv_cell(value) for value in record])


def _csv_cell(value: Any) -> Any:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, datetime | date):
        return value.isoformat()
    if isinstance(value, dict | list):  # a JSON column (a mutation's counts): JSON, not Python's repr
        value = json.dumps(value, ensure_ascii=False, separators=(",", ":"), sort_keys=True)
    if isinstance(value, str):
        value = _FORMULA_AFTER_SEPARATOR.sub(r"\1'\2", value)
        if value.startswith(_FORMULA_STARTS):
            return "'" + value
    return value


def _jsonl_lines(spec: ExportSpec, records: Iterable[tuple[Any, ...]]) -> Iterator[str]:
    encoder = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), default=_plain)
    for record in records:
        yield encoder.encode(dict(zip(spec.headers, record, strict=True))) + "\n"


def _plain(value: Any) -> Any:
    if isinstance(value, datetime | date):
        return value.isoformat()
    return str(value)  # UUID, Decimal

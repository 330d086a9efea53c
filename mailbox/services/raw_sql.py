"""Raw SQL the ORM cannot write: names taken from the models, values bound in order.

Ranking needs SQL the ORM does not produce (CTEs over unnest, LATERAL joins, pgvector and
tsvector operators). Two rules keep such SQL in step with the models and free of spliced
values:

- a table or column is named from the model's _meta and quoted by the connection, never
  written by hand, so a renamed table or column cannot leave a query reading the old one;
- every value goes through Params: bound positionally (%s) in the order the SQL text names
  it, and a compiled queryset is embedded with its own %s placeholders and parameters as
  Django produced them, never rewritten.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager, nullcontext
from typing import Any

from django.core.exceptions import EmptyResultSet
from django.db import connection, models, transaction
from django.db.backends.utils import CursorWrapper


def table(model: type[models.Model]) -> str:
    """The model's table, quoted for raw SQL."""
    return connection.ops.quote_name(model._meta.db_table)


def column(model: type[models.Model], field: str) -> str:
    """The column of the model's `field`, quoted for raw SQL."""
    found = model._meta.get_field(field)
    assert isinstance(found, models.Field) and found.column is not None  # a concrete column
    return connection.ops.quote_name(found.column)


def selects_nothing(queryset: models.QuerySet[Any]) -> bool:
    """Whether `queryset` is empty by construction: Django compiles it to no SQL at all.

    A condition such as `id__in=[]` (a scope whose folders leave nothing to read) makes the
    compiler raise EmptyResultSet instead of writing SQL, so a statement embedding such a
    queryset cannot be built; its callers answer "nothing" without querying.

    The answer is kept on the queryset itself, since one search asks it of the same
    candidates at every step: a QuerySet is never changed once built (filter() and the
    rest return a copy, which does not carry it).
    """
    known = queryset.__dict__.get(_SELECTS_NOTHING)
    if known is not None:
        return bool(known)
    try:
        queryset.query.sql_with_params()
    except EmptyResultSet:
        empty = True
    else:
        empty = False
    queryset.__dict__[_SELECTS_NOTHING] = empty
    return empty


_SELECTS_NOTHING = "_selects_nothing"


@contextmanager
def cursor_under(settings: Mapping[str, str]) -> Iterator[CursorWrapper]:
    """A cursor whose statements run under `settings`, which end with them.

    The settings are set by one statement for the block's own transaction only
    (set_config's is_local, as SET LOCAL); with none, the cursor opens no transaction.
    """
    with transaction.atomic() if settings else nullcontext(), connection.cursor() as cursor:
        if settings:
            calls = ", ".join("set_config(%s, %s, true)" for _ in settings)
            cursor.execute(f"SELECT {calls}", [value for pair in settings.items() for value in pair])
        yield cursor


class Params:
    """The values of one raw statement, in placeholder order.

    Write the statement as one f-string that calls the instance where each value goes:
    Python evaluates an f-string's fields left to right, so the values line up with their
    placeholders. A value the SQL names twice is bound twice.
    """

    def __init__(self) -> None:
        self.values: list[Any] = []  # any value psycopg adapts (Django passes its own as Any)

    def __call__(self, value: object) -> str:
        """Bind `value`; return its placeholder."""
        self.values.append(value)
        return "%s"

    def query(self, queryset: models.QuerySet[Any]) -> str:
        """Embed `queryset`'s SQL here, its parameters bound where its placeholders stand.

        A queryset that selects nothing (see selects_nothing) cannot be embedded: check first.
        """
        sql, params = queryset.query.sql_with_params()
        self.values.extend(params)
        return sql

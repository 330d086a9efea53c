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

from django.db import connection, models


def table(model: type[models.Model]) -> str:
    """The model's table, quoted for raw SQL."""
    return connection.ops.quote_name(model._meta.db_table)


def column(model: type[models.Model], field: str) -> str:
    """The column of the model's `field`, quoted for raw SQL."""
    return connection.ops.quote_name(model._meta.get_field(field).column)


class Params:
    """The values of one raw statement, in placeholder order.

    Write the statement as one f-string that calls the instance where each value goes:
    Python evaluates an f-string's fields left to right, so the values line up with their
    placeholders. A value the SQL names twice is bound twice.
    """

    def __init__(self) -> None:
        self.values: list[object] = []

    def __call__(self, value: object) -> str:
        """Bind `value`; return its placeholder."""
        self.values.append(value)
        return "%s"

    def query(self, queryset: models.QuerySet) -> str:
        """Embed `queryset`'s SQL here, its parameters bound where its placeholders stand."""
        sql, params = queryset.query.sql_with_params()
        self.values.extend(params)
        return sql

"""Insert many new rows with PostgreSQL's COPY instead of the ORM's INSERT.

Storing a batch of mail is the backfill's hottest write, and building, binding and parsing
one INSERT with a placeholder per value is a large part of it (bench/sync.py,
docs/benchmarks.md). It serves fresh objects whose key is set in Python or by a database
default and whose ids need not come back; each value is the one an INSERT would send
(through `pre_save` and `get_db_prep_save` where that changes it), generated columns are
left to the database, and no signals are sent, as with `bulk_create`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from operator import attrgetter
from typing import Any, cast

from django.db import connection, models
from django.db.models.fields import AutoFieldMixin

# Field classes whose INSERT preparation leaves a value of the right Python type as it is:
# their value is read straight off the object (a third of the cost of storing a batch went
# to preparing values one by one). Any other field, a subclass of these included, goes
# through `pre_save` and `get_db_prep_save` as an INSERT would.
_AS_IS = {
    models.CharField,
    models.TextField,
    models.BooleanField,
    models.IntegerField,
    models.BigIntegerField,
    models.PositiveIntegerField,
    models.PositiveSmallIntegerField,
    models.SmallIntegerField,
    models.UUIDField,
    models.ForeignKey,
    models.OneToOneField,
    models.BigAutoField,
    models.AutoField,
}


def copy_rows(model: type[models.Model], objects: Sequence[models.Model]) -> int:
    """Write `objects` (new rows of `model`) in one COPY; returns how many were written."""
    if not objects:
        return 0
    fields = [
        field
        for field in model._meta.concrete_fields
        if not field.generated and not (isinstance(field, AutoFieldMixin) and _unset(objects, field))
    ]
    # Concrete fields all have a column; only the stubs' Field allows None.
    columns = ", ".join(connection.ops.quote_name(cast(str, field.column)) for field in fields)
    statement = f"COPY {connection.ops.quote_name(model._meta.db_table)} ({columns}) FROM STDIN"
    readers = [_reader(field) for field in fields]
    with connection.cursor() as cursor, cursor.cursor.copy(statement) as copy:
        for obj in objects:
            copy.write_row([read(obj) for read in readers])
    return len(objects)


def copy_values(model: type[models.Model], names: Sequence[str], rows: Sequence[Sequence[Any]]) -> int:
    """Write `rows` of plain values, one per field `names` (in order), as new rows of `model`.

    For rows built without model instances (a batch's participants run to tens of thousands,
    and building each as an instance cost more than writing it): only fields whose value an
    INSERT sends as it is (_AS_IS) may be named, else ValueError. Returns how many were written.
    """
    if not rows:
        return 0
    fields = [model._meta.get_field(name) for name in names]
    awkward = [
        field.name for field in fields if type(field) not in _AS_IS and type(field) is not models.BinaryField
    ]
    if awkward:
        raise ValueError(f"copy_values writes values as they are; these fields need preparing: {awkward}")
    # The stubs type a model's fields as possibly foreign objects, which have no .column.
    columns = ", ".join(connection.ops.quote_name(cast(str, field.column)) for field in fields)  # type: ignore[union-attr]  # concrete fields only (checked above)
    statement = f"COPY {connection.ops.quote_name(model._meta.db_table)} ({columns}) FROM STDIN"
    with connection.cursor() as cursor, cursor.cursor.copy(statement) as copy:
        for row in rows:
            copy.write_row(row)
    return len(rows)


def _reader(field: models.Field[Any, Any]) -> Callable[[models.Model], Any]:
    """How one column's value is taken from an object: as is, or prepared as an INSERT prepares it."""
    if type(field) in _AS_IS:
        return attrgetter(field.attname)
    return lambda obj: field.get_db_prep_save(field.pre_save(obj, True), connection=connection)


def _unset(objects: Sequence[models.Model], field: models.Field[Any, Any]) -> bool:
    """An auto-incrementing key nobody set: the database's sequence fills it in."""
    return all(getattr(obj, field.attname) is None for obj in objects)

"""The serializer bases of the compliance API: fields declared by their Python names, published by wire names.

A field is declared as the attribute it reads (requested_at), and the request body, the
response and the OpenAPI schema name it by mailfathom.core.wire's rule (requestedAt), so no
serializer spells a camelCase name by hand. Validated input comes back under the Python names.
"""

from __future__ import annotations

from typing import Any, TypeVar

from django.db.models import Model
from rest_framework import serializers

from mailfathom.core.wire import wire_name

_M = TypeVar("_M", bound=Model)
Fields = dict[str, serializers.Field[Any, Any, Any, Any]]


def published(
    fields: dict[str, serializers.Field[Any, Any, Any, Any]],
) -> dict[str, serializers.Field[Any, Any, Any, Any]]:
    """`fields` under their wire names, each still reading (and, as input, filling) its Python name."""
    renamed: Fields = {}
    for name, field in fields.items():
        wire = wire_name(name)
        if wire != name:
            if field.source is None:
                field.source = name
            if isinstance(field, serializers.SerializerMethodField) and field.method_name is None:
                field.method_name = f"get_{name}"
        renamed[wire] = field
    return renamed


# No docstring on the bases: drf-spectacular would give it to every serializer without one.
class WireSerializer(serializers.Serializer[Any]):
    def get_fields(self) -> Fields:
        return published(super().get_fields())


class WireModelSerializer(serializers.ModelSerializer[_M]):
    def get_fields(self) -> Fields:
        return published(super().get_fields())

"""The one naming rule for results that leave the process: camelCase names.

Use-case results subclass WireModel, and the REST API's serializers and exports name their
fields with wire_name, so the MCP bridge and the REST API publish the same shape and names
without restating them.
"""

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel


def wire_name(name: str) -> str:
    """The wire name of a Python name or field lookup: received_on_or_after is receivedOnOrAfter.

    A lookup's relation steps join like words (account__account_id is accountAccountId).
    """
    return to_camel(name.replace("__", "_"))


def wire_keys(values: Mapping[str, Any]) -> dict[str, Any]:
    """The same values under their wire names, in the same order."""
    return {wire_name(name): value for name, value in values.items()}


class WireModel(BaseModel):
    model_config = ConfigDict(alias_generator=wire_name, populate_by_name=True, frozen=True)

    def wire(self) -> dict[str, Any]:
        """Return the JSON-ready dict with camelCase keys (datetimes as ISO 8601)."""
        return self.model_dump(mode="json", by_alias=True)

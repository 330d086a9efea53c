"""The one serializer configuration for results that leave the process: camelCase names.

Use-case results subclass WireModel, so the MCP bridge and the REST API publish the same
shape and names without restating them.
"""

from typing import Any

from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel


class WireModel(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, frozen=True)

    def wire(self) -> dict[str, Any]:
        """Return the JSON-ready dict with camelCase keys (datetimes as ISO 8601)."""
        return self.model_dump(mode="json", by_alias=True)

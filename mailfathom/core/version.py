"""MailFathom's version, stated here once: pyproject.toml, the OpenAPI schema and the MCP server read it."""

VERSION = "0.1.0"

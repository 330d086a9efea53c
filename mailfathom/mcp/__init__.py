"""The MCP bridge: descriptors, argument conversion, result mapping, auth and the call filter.

It calls use cases only (an import-linter contract). The ASGI app is built by
mailfathom.mcp.http.build_mcp_app and served at /mcp by mailfathom.asgi when
MAILFATHOM_MCP_ENABLED is true; docs/operations/mcp-endpoint.md says how to run it.
"""

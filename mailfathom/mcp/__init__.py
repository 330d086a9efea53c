"""The MCP bridge: descriptors, argument conversion and result mapping over the use cases.

Filled by the MCP issue. Until then `/mcp` answers 404 (see mailfathom.asgi).
"""

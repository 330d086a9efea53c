"""The pages and endpoints of /mcp's authorization server: metadata, sign-in, consent, tokens."""

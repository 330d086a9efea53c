// Preloaded into the MCP conformance suite (`node --import`) by tests/mcp/test_conformance.py.
//
// The suite's `server` command (0.1.16) connects with the TypeScript SDK's
// StreamableHTTPClientTransport and no auth provider or header option, so it cannot present a
// credential. This adds `Authorization: Bearer $MAILFATHOM_CONFORMANCE_BEARER` to every fetch
// it makes that does not carry one already: an OAuth access token or an API key, as a
// connected client would send it. Nothing else of a request is changed.
const bearer = process.env.MAILFATHOM_CONFORMANCE_BEARER;

if (bearer) {
  const fetchWithoutBearer = globalThis.fetch;
  globalThis.fetch = (input, init = {}) => {
    const headers = new Headers(init.headers ?? (input instanceof Request ? input.headers : undefined));
    if (!headers.has('authorization')) {
      headers.set('authorization', `Bearer ${bearer}`);
    }
    return fetchWithoutBearer(input, { ...init, headers });
  };
}

// Preloaded into the MCP conformance suite (`node --import`) by tests/mcp/test_conformance*.py.
//
// The suite's `server` command connects with the TypeScript SDK's
// StreamableHTTPClientTransport and no auth provider or header option, so it cannot present a
// credential; some 2026-07-28 scenarios (0.2.0's http-header-validation) send raw requests
// with node:http instead, to keep their headers exactly as written. This adds
// `Authorization: Bearer $MAILFATHOM_CONFORMANCE_BEARER` to every request made either way
// that does not carry one already: an OAuth access token or an API key, as a connected client
// would send it. Nothing else of a request is changed.
import http from 'node:http';

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

  // http.request(options[, callback]) with an options object, as the suite calls it.
  const requestWithoutBearer = http.request;
  http.request = (options, ...rest) => {
    if (options && typeof options === 'object' && !(options instanceof URL)) {
      const headers = { ...(options.headers ?? {}) };
      if (!Object.keys(headers).some((name) => name.toLowerCase() === 'authorization')) {
        headers.authorization = `Bearer ${bearer}`;
      }
      options = { ...options, headers };
    }
    return requestWithoutBearer(options, ...rest);
  };
}

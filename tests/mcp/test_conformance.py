"""The official MCP conformance suite's server scenarios, run against the real /mcp.

The suite (`@modelcontextprotocol/conformance`, pinned below) is installed from npm under
var/ once, like mcp-remote in tests/mcp/conftest.py, and its `server` command is run once per
scenario against a uvicorn serving the product (tests/mcp/servers.py); each test reads the
checks the suite wrote and fails on any FAILURE or WARNING.

What 0.1.16 can and cannot test here, found by reading it (its `list --server`, and
src/scenarios and src/runner/server.ts at tag v0.1.16):

- It has no server-side authorization scenario. Its `auth/*` scenarios are client scenarios:
  the suite plays the resource and authorization server and tests an OAuth client. Scenarios
  for an authorization server (metadata, authorization code grant, driven through a browser
  callback on 127.0.0.1) come with the `authorization` command of the 0.2.0 pre-releases.
- Its server scenarios connect with the TypeScript SDK's client and no auth provider and no
  header option, so it cannot sign in nor present a token. The oauth and api-key postures
  are therefore tested with a credential it is handed: tests/mcp/conformance_bearer.mjs,
  preloaded into it, adds `Authorization: Bearer …` to its requests (a token issued by the
  product's own OAuth use cases, or a key). Posture `none` (loopback) needs nothing.
- Every scenario speaks the SDK's latest revision, 2025-11-25 (SDK 1.32); the revision tags
  in its list ([2025-06-18,2025-11-25]) only filter which scenarios run. It does not know the
  stateless 2026-07-28 revision (its 0.2.0 pre-releases do).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from tests.mcp.conformance_support import installed_suite, listed_scenarios, run_scenario, verdicts
from tests.mcp.oauth_support import issue_token, world_with_people
from tests.mcp.servers import ROOT, Server

pytestmark = pytest.mark.django_db(transaction=True)

CONFORMANCE = "@modelcontextprotocol/conformance@0.1.16"
PREFIX = ROOT / "var" / "npm-conformance"

# The scenarios that apply to /mcp, run in every posture: the handshake, ping and tools/list.
GENERAL = ["server-initialize", "ping", "tools-list"]
# Run in posture `none` only: its stated scope is a localhost server without authentication
# (a request without a credential is refused 401 in the other postures, before Host or Origin
# is looked at, so its "valid localhost Host is accepted" check cannot pass there).
UNAUTHENTICATED_ONLY = ["dns-rebinding-protection"]

EXCLUDED = {
    # The server declares no `logging` capability (its tools log nothing to the client), so
    # logging/setLevel is -32601; tools-call-with-logging also calls the suite's reference
    # tool `test_tool_with_logging`. Spec 2025-11-25, server/utilities/logging: "Servers that
    # emit log message notifications MUST declare the logging capability".
    "logging-set-level": "no logging capability",
    "tools-call-with-logging": "no logging capability; the suite's own reference tool",
    # No `completions` capability: there are no prompts or resource templates to complete.
    "completion-complete": "no completions capability",
    # Each calls a tool of the suite's reference "everything" server by name (test_simple_text,
    # test_image_content, test_audio_content, test_embedded_resource,
    # test_multiple_content_types, test_error_handling, test_tool_with_progress,
    # test_sampling, test_elicitation, json_schema_2020_12_tool, the elicitation SEP-1034 and
    # SEP-1330 tools). This server publishes only its mail tools and the suite cannot be
    # pointed at them; sampling and elicitation are server-to-client requests, which a
    # stateless server answering in JSON never sends.
    "tools-call-simple-text": "the suite's own reference tool",
    "tools-call-image": "the suite's own reference tool",
    "tools-call-audio": "the suite's own reference tool",
    "tools-call-embedded-resource": "the suite's own reference tool",
    "tools-call-mixed-content": "the suite's own reference tool",
    "tools-call-error": "the suite's own reference tool",
    "tools-call-with-progress": "the suite's own reference tool",
    "tools-call-sampling": "the suite's own reference tool; no server-to-client requests",
    "tools-call-elicitation": "the suite's own reference tool; no server-to-client requests",
    "json-schema-2020-12": "the suite's own reference tool",
    "elicitation-sep1034-defaults": "the suite's own reference tool; no server-to-client requests",
    "elicitation-sep1330-enums": "the suite's own reference tool; no server-to-client requests",
    # SEP-1699 SSE polling and concurrent SSE streams need a session and SSE responses. /mcp is
    # stateless, answers every POST in application/json and GET with 405, as the transport
    # allows (spec 2025-11-25, basic/transports: for a request "the server MUST either return
    # Content-Type: text/event-stream ... or Content-Type: application/json"; for GET "the
    # server MUST either return Content-Type: text/event-stream ... or else return HTTP 405").
    # Run anyway, both stop at a WARNING (no session ID) and check nothing; server-sse-polling
    # also calls the suite's reference tool `test_reconnection`.
    "server-sse-polling": "stateless, JSON responses, no SSE stream",
    "server-sse-multiple-streams": "stateless, JSON responses, no SSE stream",
    # The server offers neither resources nor prompts (no such capability): -32601.
    "resources-list": "no resources",
    "resources-read-text": "no resources",
    "resources-read-binary": "no resources",
    "resources-templates-read": "no resources",
    "resources-subscribe": "no resources",
    "resources-unsubscribe": "no resources",
    "prompts-list": "no prompts",
    "prompts-get-simple": "no prompts",
    "prompts-get-with-args": "no prompts",
    "prompts-get-embedded-resource": "no prompts",
    "prompts-get-with-image": "no prompts",
}

POSTURES = ["oauth", "oauth+api-key", "api-key", "none"]
RUNS = [(posture, name) for posture in POSTURES for name in GENERAL] + [
    ("none", name) for name in UNAUTHENTICATED_ONLY
]


@pytest.fixture(scope="session")
def conformance() -> list[str]:
    """The command that runs the suite (tests/mcp/conformance_support.py), installed once."""
    return installed_suite(CONFORMANCE, PREFIX)


@pytest.fixture(scope="module")
def servers(module_server_factory) -> Iterator[Callable[[str], Server]]:
    """One server per posture, started when first asked for."""
    started: dict[str, Server] = {}

    def server(posture: str) -> Server:
        if posture not in started:
            started[posture] = module_server_factory(MAILFATHOM_MCP_AUTH=posture)
        return started[posture]

    yield server


def credential(posture: str, server: Server, api_key: str) -> str | None:
    """What a connected client presents in `posture`: an access token for this /mcp, issued
    by the product's OAuth use cases to a person who consented to their account; or a key."""
    if posture in ("oauth", "oauth+api-key"):
        _, alice, _ = world_with_people()
        access, _, _ = issue_token(alice, ["work"], server.url)
        return access
    if posture == "api-key":
        return api_key
    return None


@pytest.mark.parametrize(("posture", "scenario"), RUNS, ids=[f"{p}/{s}" for p, s in RUNS])
def test_scenario_passes(conformance, servers, api_key, tmp_path, posture, scenario):
    server = servers(posture)
    checks = run_scenario(conformance, server.url, scenario, tmp_path, credential(posture, server, api_key))
    results = verdicts(checks)
    assert results, checks
    assert all(status == "SUCCESS" for _, status, _ in results), results


@pytest.mark.parametrize("posture", ["oauth", "api-key"])
def test_without_a_credential_the_handshake_is_refused(conformance, servers, tmp_path, posture):
    """The control for the runs above: the suite alone is refused (the 401's body), so their
    passes were made with the credential it was handed, through the posture's gate."""
    checks = run_scenario(conformance, servers(posture).url, "server-initialize", tmp_path, None)
    [(_, status, message)] = verdicts(checks)
    assert status == "FAILURE"
    assert '{"error": "unauthorized"}' in (message or ""), message


def test_every_server_scenario_of_the_suite_is_run_or_excluded(conformance, tmp_path):
    """A new version's new scenario fails here until it is run or excluded with a reason."""
    names = listed_scenarios(conformance, tmp_path, "server")
    run = set(GENERAL) | set(UNAUTHENTICATED_ONLY)
    assert not run & set(EXCLUDED)
    assert sorted(names) == sorted(run | set(EXCLUDED))

"""Each client snippet, read as its client reads it, reaches a real /mcp with the real client.

The four applications are desktop programs and are not run here: what is tested is that the
URL and the Authorization header each snippet carries, resolved the way its client resolves
them, are what a running server accepts. Claude Desktop's bridge, mcp-remote, is run for
real: the snippet's arguments and environment, over stdio, to the server.
"""

from __future__ import annotations

import json
import re
import shlex
import shutil

import anyio
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters, stdio_client

from accounts.services.mcp_clients import CLIENTS, client_config, mcp_url
from tests.configure import configure
from tests.mcp.conftest import with_client

pytestmark = pytest.mark.django_db(transaction=True)

_HEADER = re.compile(r"^([A-Za-z0-9_-]+):\s*(.*)$")  # how mcp-remote reads --header


def _reach(client: str, text: str, key: str) -> tuple[str, dict[str, str]]:
    """The URL and headers `client` would send, from its snippet `text`."""
    if client == "claude-code":
        argv = shlex.split(text)
        assert argv[:6] == ["claude", "mcp", "add", "--transport", "http", "mailfathom"]
        name, value = _HEADER.match(argv[argv.index("--header") + 1]).groups()  # type: ignore[union-attr]  # the snippet always carries the header
        return argv[6], {name: value}
    document = json.loads(text)
    if client == "claude-desktop":
        server = document["mcpServers"]["mailfathom"]
        args = server["args"]
        header = args[args.index("--header") + 1]
        for variable, value in server["env"].items():
            header = header.replace("${" + variable + "}", value)
        name, value = _HEADER.match(header).groups()  # type: ignore[union-attr]  # the snippet always carries the header
        return args[2], {name: value}
    if client == "cursor":
        server = document["mcpServers"]["mailfathom"]
        return server["url"], server["headers"]
    server = document["servers"]["mailfathom"]
    assert document["inputs"][0]["password"] is True
    # VS Code asks for the key (the page shows it) and puts it in place of the input.
    headers = {k: v.replace("${input:mailfathom-mcp-key}", key) for k, v in server["headers"].items()}
    return server["url"], headers


@pytest.mark.parametrize("client", CLIENTS)
def test_the_snippet_reaches_the_endpoint_and_lists_the_tools(client, mcp_server, api_key, settings):
    configure(settings, public_base_url="")
    url, headers = _reach(client, client_config(client, mcp_url(mcp_server.base), api_key).text, api_key)

    async def names(session):
        return [tool.name for tool in (await session.list_tools()).tools]

    assert url == mcp_server.url
    assert "search_emails" in with_client(url, None, names, headers=headers)


# --- Claude Desktop's bridge, for real ---------------------------------------------------


def test_claude_desktops_snippet_runs_through_mcp_remote_to_the_endpoint(
    mcp_server, api_key, settings, mcp_remote, tmp_path
):
    configure(settings, public_base_url="")
    snippet = client_config("claude-desktop", mcp_url(mcp_server.base), api_key).text
    server = json.loads(snippet)["mcpServers"]["mailfathom"]
    assert server["command"] == "npx" and server["args"][:2] == ["-y", "mcp-remote"]
    # What `npx -y mcp-remote` starts, with the rest of the snippet's arguments and environment as written.
    params = StdioServerParameters(
        command=shutil.which("node") or "node",
        args=[str(mcp_remote), *server["args"][2:]],
        env={**server["env"], "MCP_REMOTE_CONFIG_DIR": str(tmp_path)},
    )

    async def names() -> list[str]:
        with open(tmp_path / "mcp-remote.log", "w") as errlog:
            async with Client(stdio_client(params, errlog=errlog)) as client:
                return [tool.name for tool in (await client.list_tools()).tools]

    assert "search_emails" in anyio.run(names)

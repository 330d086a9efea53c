"""Ready-to-paste configuration for the MCP clients people connect to /mcp.

One source for the key page in admin and `manage.py mcp_client_config`, so both print the
same snippets. Each client reaches the Streamable HTTP endpoint with the key as a Bearer
header; Claude Desktop speaks only stdio to its servers, so it starts `mcp-remote` (an npm
package run by npx, Node 18 or later) which forwards to the URL.

A snippet holds the key only when one is given (the page shown once after creating a key,
or `--key`); otherwise each client's own placeholder stands in for it: an environment
variable the shell or the client expands, or VS Code's password prompt.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import urlsplit

from django.conf import settings

MCP_PATH = "/mcp"
SERVER_NAME = "mailfathom"
KEY_VARIABLE = "MAILFATHOM_MCP_KEY"
UNKNOWN_CLIENT = "Choose one of: {choices}."
_LOOPBACK_NAMES = {"localhost", "127.0.0.1"}  # the hosts mcp-remote accepts over plain http


@dataclass(frozen=True)
class ClientConfig:
    client: str  # the identifier: claude-desktop, claude-code, cursor, vscode
    title: str
    where: str  # where the snippet goes, in a sentence
    text: str  # the snippet itself
    note: str = ""

    @property
    def element_id(self) -> str:
        """The HTML id the admin page gives this snippet (browser tests find it by this)."""
        return f"mcp-client-config-{self.client}"


def mcp_url(request_origin: str = "") -> str:
    """The endpoint's full URL: MAILFATHOM_PUBLIC_BASE_URL when set, else `request_origin`.

    `request_origin` is the scheme and host a browser reached admin at (http://host:port);
    behind a proxy that rewrites the host, set MAILFATHOM_PUBLIC_BASE_URL instead.
    """
    return endpoint_url(str(settings.MAILFATHOM.public_base_url).strip() or request_origin)


def endpoint_url(origin: str) -> str:
    """`origin` (scheme, host, port, perhaps a path prefix) with the endpoint's path added once."""
    return origin.rstrip("/").removesuffix(MCP_PATH) + MCP_PATH


def default_origin() -> str:
    """Where this process serves HTTP, for a caller with no request (a management command)."""
    host = str(settings.MAILFATHOM.http_host)
    if host in ("0.0.0.0", "::", "127.0.0.1", "::1", ""):  # noqa: S104 (reading, not binding)
        host = "localhost"
    return f"http://{host}:{int(settings.MAILFATHOM.http_port)}"


def client_configs(url: str, key: str | None = None) -> list[ClientConfig]:
    """The snippet of every client, in the order the page shows them."""
    return [builder(url, key) for builder in _BUILDERS.values()]


def client_config(client: str, url: str, key: str | None = None) -> ClientConfig:
    """One client's snippet; ValueError naming the choices for an unknown client."""
    builder = _BUILDERS.get(client)
    if builder is None:
        raise ValueError(UNKNOWN_CLIENT.format(choices=", ".join(CLIENTS)))
    return builder(url, key)


def _json(document: Mapping[str, object]) -> str:
    return json.dumps(document, indent=2) + "\n"


def _claude_desktop(url: str, key: str | None) -> ClientConfig:
    args = ["-y", "mcp-remote", url, "--header", "Authorization:${AUTH_HEADER}"]
    parts = urlsplit(url)
    if parts.scheme == "http" and parts.hostname not in _LOOPBACK_NAMES:
        args.append("--allow-http")  # mcp-remote refuses plain http to other hosts without it
    header = f"Bearer {key}" if key else "Bearer PASTE-YOUR-MCP-KEY-HERE"
    document = {"mcpServers": {SERVER_NAME: {"command": "npx", "args": args, "env": {"AUTH_HEADER": header}}}}
    return ClientConfig(
        client="claude-desktop",
        title="Claude Desktop",
        where=(
            "Settings › Developer › Edit Config opens claude_desktop_config.json; merge this into "
            "its mcpServers and restart Claude Desktop (quit it, closing the window is not enough)."
        ),
        text=_json(document),
        # No spaces inside args: Claude Desktop on Windows splits them; the env value may hold one.
        note="Needs Node.js 18 or later (npx runs mcp-remote, which forwards stdio to the URL).",
    )


def _claude_code(url: str, key: str | None) -> ClientConfig:
    header = f"Authorization: Bearer {key}" if key else f"Authorization: Bearer ${KEY_VARIABLE}"
    # The placeholder is left for the shell to expand, so it is double-quoted, not shlex-quoted.
    quoted = shlex.quote(header) if key else f'"{header}"'
    command = f"claude mcp add --transport http {SERVER_NAME} {shlex.quote(url)} --header {quoted}\n"
    return ClientConfig(
        client="claude-code",
        title="Claude Code",
        where="Run in a terminal (add --scope user to reach it from every project).",
        text=command,
        note="" if key else f"Set {KEY_VARIABLE} in that shell first.",
    )


def _cursor(url: str, key: str | None) -> ClientConfig:
    header = f"Bearer {key}" if key else f"Bearer ${{env:{KEY_VARIABLE}}}"
    document = {"mcpServers": {SERVER_NAME: {"url": url, "headers": {"Authorization": header}}}}
    return ClientConfig(
        client="cursor",
        title="Cursor",
        where="Merge into ~/.cursor/mcp.json (every project) or .cursor/mcp.json (one project).",
        text=_json(document),
        note="" if key else f"Cursor reads {KEY_VARIABLE} from the environment it was started in.",
    )


def _vscode(url: str, key: str | None) -> ClientConfig:
    # VS Code asks for the key once and keeps it in its secret storage, so a workspace file
    # that gets committed carries no key.
    prompt = "mailfathom-mcp-key"
    document = {
        "inputs": [
            {"type": "promptString", "id": prompt, "description": "MailFathom MCP key", "password": True}
        ],
        "servers": {
            SERVER_NAME: {
                "type": "http",
                "url": url,
                "headers": {"Authorization": f"Bearer ${{input:{prompt}}}"},
            }
        },
    }
    return ClientConfig(
        client="vscode",
        title="VS Code",
        where=(
            "Save as .vscode/mcp.json in the workspace (or use MCP: Open User Configuration "
            "for every workspace)."
        ),
        text=_json(document),
        note="VS Code asks for the key when the server first starts"
        + (": paste the key above." if key else "."),
    )


_BUILDERS = {
    "claude-desktop": _claude_desktop,
    "claude-code": _claude_code,
    "cursor": _cursor,
    "vscode": _vscode,
}
CLIENTS = tuple(_BUILDERS)

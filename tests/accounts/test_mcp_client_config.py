"""Client configuration for /mcp: the key page and `manage.py mcp_client_config` print the same
snippets, for Claude Desktop (through mcp-remote), Claude Code, Cursor and VS Code."""

from __future__ import annotations

import html
import io
import json
import re
import shlex
import sys
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.urls import reverse

from accounts.models import McpApiKey
from accounts.services.mcp_clients import CLIENTS, client_config, client_configs
from tests.configure import configure

KEY = "mfk_" + "A" * 43
URL = "https://mail.example.org/mcp"


def _run(*args: str) -> tuple[str, str]:
    out, err = StringIO(), StringIO()
    call_command("mcp_client_config", *args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def _snippets(page: str) -> dict[str, str]:
    found = re.findall(r'<pre id="mcp-client-config-([a-z-]+)">(.*?)</pre>', page, re.S)
    return {client: html.unescape(text) for client, text in found}


# --- the snippets ------------------------------------------------------------------------


def test_claude_desktop_starts_mcp_remote_with_the_url_and_the_key_in_its_environment():
    document = json.loads(client_config("claude-desktop", URL, KEY).text)

    server = document["mcpServers"]["mailfathom"]
    assert server["command"] == "npx"
    assert server["args"] == ["-y", "mcp-remote", URL, "--header", "Authorization:${AUTH_HEADER}"]
    assert server["env"] == {"AUTH_HEADER": f"Bearer {KEY}"}
    assert not any(" " in arg for arg in server["args"])  # Windows splits args on spaces


def test_claude_desktop_allows_plain_http_only_where_mcp_remote_needs_to_be_told():
    def args(url: str) -> list[str]:
        return json.loads(client_config("claude-desktop", url, KEY).text)["mcpServers"]["mailfathom"]["args"]

    assert "--allow-http" not in args("http://localhost:8000/mcp")
    assert "--allow-http" not in args("http://127.0.0.1:8000/mcp")
    assert "--allow-http" in args("http://mail.internal:8000/mcp")
    assert "--allow-http" not in args(URL)


def test_claude_code_is_one_command_with_the_http_transport_and_the_header():
    argv = shlex.split(client_config("claude-code", URL, KEY).text)

    assert argv == [
        "claude",
        "mcp",
        "add",
        "--transport",
        "http",
        "mailfathom",
        URL,
        "--header",
        f"Authorization: Bearer {KEY}",
    ]


def test_cursor_takes_the_url_and_the_header():
    document = json.loads(client_config("cursor", URL, KEY).text)

    assert document == {
        "mcpServers": {"mailfathom": {"url": URL, "headers": {"Authorization": f"Bearer {KEY}"}}}
    }


def test_vscode_declares_an_http_server_and_prompts_for_the_key():
    document = json.loads(client_config("vscode", URL, KEY).text)

    server = document["servers"]["mailfathom"]
    assert server["type"] == "http"
    assert server["url"] == URL
    assert server["headers"] == {"Authorization": "Bearer ${input:mailfathom-mcp-key}"}
    assert document["inputs"] == [
        {
            "type": "promptString",
            "id": "mailfathom-mcp-key",
            "description": "MailFathom MCP key",
            "password": True,
        }
    ]
    assert KEY not in client_config("vscode", URL, KEY).text  # a workspace file may be committed


def test_without_a_key_each_client_gets_a_placeholder_and_no_key():
    texts = {config.client: config.text for config in client_configs(URL)}

    assert "$MAILFATHOM_MCP_KEY" in texts["claude-code"]
    assert "${env:MAILFATHOM_MCP_KEY}" in texts["cursor"]
    assert "${input:mailfathom-mcp-key}" in texts["vscode"]
    assert "PASTE-YOUR-MCP-KEY-HERE" in texts["claude-desktop"]
    assert not any("mfk_" in text for text in texts.values())


def test_an_unknown_client_names_the_choices():
    with pytest.raises(ValueError, match="claude-desktop, claude-code, cursor, vscode"):
        client_config("emacs", URL)


# --- the command -------------------------------------------------------------------------


@pytest.mark.parametrize("client", CLIENTS)
def test_the_command_prints_the_use_cases_snippet_on_stdout_and_where_it_goes_on_stderr(client, settings):
    configure(settings, public_base_url="https://mail.example.org/")

    out, err = _run(client, "--key", KEY)

    assert out == client_config(client, URL, KEY).text
    assert client_config(client, URL, KEY).title in err


def test_the_command_without_a_key_prints_the_placeholder(settings):
    configure(settings, public_base_url="https://mail.example.org")

    out, err = _run("claude-code")

    assert shlex.split(out)[-1] == "Authorization: Bearer $MAILFATHOM_MCP_KEY"
    assert "MAILFATHOM_MCP_KEY" in err


def test_the_command_reads_the_key_from_stdin(settings, monkeypatch):
    configure(settings, public_base_url="https://mail.example.org")
    monkeypatch.setattr(sys, "stdin", io.StringIO(KEY + "\n"))

    out, _ = _run("cursor", "--key", "-")

    assert json.loads(out)["mcpServers"]["mailfathom"]["headers"]["Authorization"] == f"Bearer {KEY}"


def test_the_command_uses_the_serving_address_without_a_public_base_url(settings):
    configure(settings, public_base_url="", http_host="127.0.0.1", http_port=8123)

    out, _ = _run("cursor")

    assert json.loads(out)["mcpServers"]["mailfathom"]["url"] == "http://localhost:8123/mcp"


def test_the_command_takes_an_explicit_url_with_or_without_the_path(settings):
    configure(settings, public_base_url="https://ignored.example.org")

    for given in ("https://other.example.org", "https://other.example.org/mcp"):
        out, _ = _run("cursor", "--url", given)
        assert json.loads(out)["mcpServers"]["mailfathom"]["url"] == "https://other.example.org/mcp"


def test_the_command_refuses_an_unknown_client():
    with pytest.raises(CommandError, match="invalid choice"):
        _run("emacs")


# --- the key page ------------------------------------------------------------------------


@pytest.mark.django_db
def test_the_key_page_shows_the_full_url_and_every_clients_snippet_with_the_key(admin_client, settings):
    configure(settings, public_base_url="")

    response = admin_client.post(reverse("admin:accounts_mcpapikey_add"), {"name": "laptop"})
    page = response.content.decode()
    [key] = set(re.findall(r"mfk_[A-Za-z0-9_-]{43}", page))
    snippets = _snippets(page)

    assert '<code id="mcp-endpoint-url">http://testserver/mcp</code>' in page
    assert re.findall(r"<h1[^>]*>(.*?)</h1>", page) == ["MCP API key created"]  # once, not twice
    assert set(snippets) == set(CLIENTS)
    # The very text the command prints, from the one use case.
    for client in CLIENTS:
        assert snippets[client] == client_config(client, "http://testserver/mcp", key).text
    assert key in snippets["claude-desktop"] and key in snippets["claude-code"] and key in snippets["cursor"]


@pytest.mark.django_db
def test_the_key_page_prefers_the_public_base_url_and_says_when_the_endpoint_is_off(admin_client, settings):
    configure(settings, public_base_url="https://mail.example.org", mcp_enabled=False)

    page = admin_client.post(reverse("admin:accounts_mcpapikey_add"), {"name": "laptop"}).content.decode()

    assert f'<code id="mcp-endpoint-url">{URL}</code>' in page
    assert json.loads(_snippets(page)["cursor"])["mcpServers"]["mailfathom"]["url"] == URL
    assert "MAILFATHOM_MCP_ENABLED=true" in page


@pytest.mark.django_db
def test_a_keys_own_page_says_how_to_get_a_clients_configuration_without_the_key(admin_client):
    admin_client.post(reverse("admin:accounts_mcpapikey_add"), {"name": "laptop"})
    page = admin_client.get(reverse("admin:accounts_mcpapikey_change", args=[McpApiKey.objects.get().pk]))

    assert "manage.py mcp_client_config CLIENT" in page.content.decode()
    assert not re.search(r"mfk_[A-Za-z0-9_-]{43}", page.content.decode())


def test_the_command_runs_from_configuration_alone_and_keeps_the_note_off_the_snippet(tmp_path):
    import json
    import os
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "MAILFATHOM_VAR_DIR": str(tmp_path / "var"), "MAILFATHOM_HTTP_PORT": "8123"}
    done = subprocess.run(
        [sys.executable, "manage.py", "mcp_client_config", "claude-desktop"],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert json.loads(done.stdout)["mcpServers"]["mailfathom"]
    assert done.stdout.endswith("}\n") and "8123/mcp" in done.stdout
    assert done.stderr.startswith("\nClaude Desktop:")
    # No database was needed: the embedded PostgreSQL was neither started nor created.
    assert not (tmp_path / "var" / "postgres").exists()

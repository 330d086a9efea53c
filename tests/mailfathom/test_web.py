"""The ASGI app under a real uvicorn: health, admin, static files, and /mcp answering 404."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from tests.support import free_port, wait_until_serving

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def server():
    port = free_port()
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "mailfathom.test_settings"}
    process = subprocess.Popen(
        [sys.executable, "-m", "uvicorn", "mailfathom.asgi:application", "--port", str(port)],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    base = f"http://127.0.0.1:{port}"
    wait_until_serving(base, process, lambda: process.stderr.read().decode(errors="replace"), seconds=60)
    yield base
    process.terminate()
    process.wait(timeout=10)


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):
        return None


_opener = urllib.request.build_opener(_NoRedirect)


def _get(url: str):
    try:
        with _opener.open(url, timeout=5) as response:
            return response.status, response.read(), response.headers
    except urllib.error.HTTPError as error:
        return error.code, error.read(), error.headers


def test_health_reports_database_and_redis(server):
    status, body, _ = _get(server + "/health")
    assert status == 200
    parts = json.loads(body)["parts"]
    assert parts["database"] == {"status": "ok", "required": True}
    assert parts["redis"] == {"status": "ok", "required": True}


@pytest.mark.parametrize("path", ["/mcp", "/mcp/", "/mcp/anything"])
def test_mcp_path_answers_404_while_disabled(server, path):
    status, body, headers = _get(server + path)
    assert status == 404
    assert headers["content-type"] == "application/json"


def test_paths_merely_starting_with_mcp_go_to_django(server):
    status, body, headers = _get(server + "/mcpx")
    assert status == 404
    assert headers["content-type"].startswith("text/html")


def test_admin_login_and_its_static_files_are_served(server):
    status, body, _ = _get(server + "/admin/login/")
    assert status == 200
    assert b"MailFathom" in body
    status, body, _ = _get(server + "/static/admin/css/base.css")
    assert status == 200
    assert len(body) > 1000


def test_api_requires_staff(server):
    status, _, headers = _get(server + "/api/")
    assert status == 302
    assert headers["location"].startswith("/admin/login/")

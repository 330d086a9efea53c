"""The project's shape: our `mailbox` app shadows the standard library's module."""

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_import_mailbox_resolves_inside_the_repository():
    import mailbox

    assert Path(mailbox.__file__).resolve().is_relative_to(ROOT)
    assert not hasattr(mailbox, "Maildir")  # the stdlib module's class is not reachable


def test_no_code_of_ours_uses_the_stdlib_mailbox_api():
    offenders = []
    for path in ROOT.glob("**/*.py"):
        if ".venv" in path.parts or "var" in path.parts:
            continue
        text = path.read_text()
        if "mailbox.Maildir" in text or "mailbox.mbox" in text:
            offenders.append(str(path.relative_to(ROOT)))
    offenders.remove("tests/mailfathom/test_layout.py")
    assert offenders == []


def test_privacy_check_catches_a_leaking_log_line(caplog):
    import logging

    from tests import privacy

    privacy.remember("Quarterly secret subject")
    before = len(privacy._records)
    logging.getLogger("mailfathom.test").warning("report: %s", "Quarterly secret subject")
    leaked = [record for record in privacy._records[before:] if "Quarterly secret subject" in record[0]]
    assert leaked, "the suite-wide privacy handler did not see the log line"
    line, template = leaked[0]
    # Counted as a leak: the value came through the arguments, not the format string.
    assert privacy._carries(line, "Quarterly secret subject")
    assert not privacy._carries(template, "Quarterly secret subject")
    privacy._records[before:] = [record for record in privacy._records[before:] if record not in leaked]


def _modules_after(statement: str) -> set[str]:
    """The modules a fresh interpreter holds after `statement`, with Django's settings named."""
    import json
    import os
    import subprocess
    import sys

    code = f"import json, sys\n{statement}\nprint(json.dumps(sorted(sys.modules)))"
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "mailfathom.test_settings"}
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    return set(json.loads(done.stdout.strip().splitlines()[-1]))


def test_the_ground_floor_loads_without_celery():
    # An app's `from mailfathom.core.errors import ...` must not start Celery's autodiscovery.
    loaded = _modules_after("import mailfathom.core.errors")
    assert "mailfathom.core.errors" in loaded
    assert not {name for name in loaded if name == "celery" or name.startswith("celery.")}
    assert "mailfathom.celery" not in loaded


def test_a_django_process_still_loads_the_celery_app_tasks_send_through():
    loaded = _modules_after("import django\ndjango.setup()")
    assert "mailfathom.celery" in loaded


def test_the_two_contracts_name_the_same_roof():
    # The house contract names the roof as mailfathom.X (it layers the apps too); the
    # exhaustive one as X inside mailfathom. A module on one roof only is on no floor of
    # the other, so the two lists must hold the same names.
    import tomllib

    contracts = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]
    house = next(c for c in contracts if c["name"].startswith("The house"))
    every = next(c for c in contracts if c.get("exhaustive"))

    def names(layer: str) -> set[str]:
        return {name.strip() for name in layer.split(":")}

    assert {name.removeprefix("mailfathom.") for name in names(house["layers"][0])} == names(
        every["layers"][0]
    )
    assert len(names(every["layers"][0])) > 20

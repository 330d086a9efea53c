"""MAILFATHOM_* settings: parsing, ranges, and refusal at startup naming the setting."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.checks import run_checks

from mailfathom.core import config

ROOT = Path(__file__).resolve().parents[2]


def test_defaults_apply_when_nothing_is_set():
    loaded = config.load({})
    assert loaded.problems == {}
    assert loaded.values.http_port == 8000
    assert loaded.values.mcp_enabled is False
    assert loaded.values.answering_max_passages_per_retrieval == 20
    assert loaded.values.answering_max_tokens_per_run == 80000


@pytest.mark.parametrize(
    ("name", "raw", "expected"),
    [
        ("MAILFATHOM_HTTP_PORT", "9000", 9000),
        ("MAILFATHOM_MCP_ENABLED", "yes", True),
        ("MAILFATHOM_MCP_ENABLED", "0", False),
        ("MAILFATHOM_LOG_LEVEL", "DEBUG", "DEBUG"),
        ("MAILFATHOM_ANSWERING_MAX_PASSAGES_PER_RETRIEVAL", "1", 1),
    ],
)
def test_valid_values_are_read(name, raw, expected):
    loaded = config.load({name: raw})
    assert loaded.problems == {}
    assert getattr(loaded.values, config.BY_NAME[name].attribute) == expected


@pytest.mark.parametrize(
    ("name", "raw", "range_text"),
    [
        ("MAILFATHOM_HTTP_PORT", "0", "from 1 to 65535"),
        ("MAILFATHOM_HTTP_PORT", "65536", "from 1 to 65535"),
        ("MAILFATHOM_HTTP_PORT", "eighty", "from 1 to 65535"),
        ("MAILFATHOM_ANSWERING_MAX_PASSAGES_PER_RETRIEVAL", "21", "from 1 to 20"),
        ("MAILFATHOM_MCP_ENABLED", "maybe", "true or false"),
        ("MAILFATHOM_LOG_LEVEL", "LOUD", "one of DEBUG, INFO, WARNING, ERROR"),
    ],
)
def test_invalid_values_are_problems_naming_setting_and_range_not_value(name, raw, range_text):
    loaded = config.load({name: raw})
    problem = loaded.problems[name]
    assert problem.startswith(name)
    assert range_text in problem
    assert raw not in problem.replace(name, "").replace(range_text, "")
    assert getattr(loaded.values, config.BY_NAME[name].attribute) == config.BY_NAME[name].default


def test_system_check_reports_each_problem(settings):
    settings.MAILFATHOM_CONFIG_PROBLEMS = {"MAILFATHOM_HTTP_PORT": "MAILFATHOM_HTTP_PORT must be x."}
    errors = [e for e in run_checks() if e.id == "mailfathom.E001"]
    assert [e.msg for e in errors] == ["MAILFATHOM_HTTP_PORT must be x."]


def test_keyring_check_refuses_a_key_that_is_not_fernet(settings):
    settings.MAILFATHOM_KEYRING = "not-a-key"
    assert "mailfathom.E004" in {e.id for e in run_checks()}


def _run(code: list[str], **env: str) -> subprocess.CompletedProcess[str]:
    environment = {**os.environ, "DJANGO_SETTINGS_MODULE": "mailfathom.test_settings", **env}
    return subprocess.run(
        [sys.executable, *code], cwd=ROOT, env=environment, capture_output=True, text=True, timeout=120
    )


@pytest.mark.parametrize(
    ("name", "raw"),
    [("MAILFATHOM_ANSWERING_MAX_PASSAGES_PER_RETRIEVAL", "50"), ("MAILFATHOM_HTTP_PORT", "-1")],
)
def test_manage_py_check_refuses_out_of_range_setting(name, raw):
    result = _run(["manage.py", "check"], **{name: raw})
    assert result.returncode != 0
    assert name in result.stderr
    assert "mailfathom.E001" in result.stderr


def test_asgi_app_refuses_to_load_with_out_of_range_setting():
    result = _run(["-c", "import mailfathom.asgi"], MAILFATHOM_ANSWERING_MAX_CITATIONS="0")
    assert result.returncode != 0
    assert "MAILFATHOM_ANSWERING_MAX_CITATIONS" in result.stderr


def test_manage_py_check_passes_with_defaults():
    result = _run(["manage.py", "check"])
    assert result.returncode == 0, result.stderr


def test_readme_configuration_table_lists_every_setting():
    readme = (ROOT / "README.md").read_text()
    declared = (*config.SETTINGS, *config.DEPLOYMENT_SETTINGS)
    missing = [s.name for s in declared if f"`{s.name}`" not in readme]
    assert missing == []


def test_every_setting_our_code_reads_is_declared():
    from mailfathom.checks import check_settings_are_declared

    assert check_settings_are_declared() == []


def test_a_misspelt_setting_is_refused_at_startup_naming_file_line_and_name(tmp_path):
    from mailfathom.config_usage import undeclared_reads

    (tmp_path / "mailbox").mkdir()
    (tmp_path / "mailbox" / "reader.py").write_text(
        "from django.conf import settings\n"
        "from mailfathom.core.config import MailFathomSettings\n\n\n"
        "def limit():\n"
        "    return settings.MAILFATHOM.content_body_character_limt\n\n\n"
        "def model(values: MailFathomSettings):\n"
        "    return values.chat_modle, values.chat_model, values.replace(chat_model='m')\n"
    )
    found = undeclared_reads(tmp_path)
    assert sorted((read.path, read.line, read.name) for read in found) == [
        ("mailbox/reader.py", 6, "content_body_character_limt"),
        ("mailbox/reader.py", 10, "chat_modle"),
    ]


def test_the_typed_settings_refuse_an_undeclared_name_when_changed():
    with pytest.raises(TypeError):
        config.load({}).values.replace(chat_modle="m")


def test_a_relative_var_dir_is_taken_from_the_project_folder(monkeypatch, tmp_path):
    from mailfathom import embedded

    monkeypatch.setenv("MAILFATHOM_VAR_DIR", str(tmp_path / "elsewhere"))
    assert embedded.var_dir() == tmp_path / "elsewhere"
    monkeypatch.setenv("MAILFATHOM_VAR_DIR", "var")
    assert embedded.var_dir() == ROOT / "var"

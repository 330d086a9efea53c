"""`manage.py check --deploy` with the settings docs/operations/deployment.md documents: no warning."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

# The production settings docs/operations/deployment.md lists (secrets made up for the test).
DOCUMENTED = {
    "DJANGO_DEBUG": "false",
    "DJANGO_SECRET_KEY": "k3v9-Qm2xZp7Lr0aWt5Yb8Nc1Hd4Fg6Js_Ue0Vi2Ko3Pl9Mq7Rs5Tu1Xw8Yz4Ab6Cd",
    "DJANGO_ALLOWED_HOSTS": "mail.example.org",
    "DJANGO_CSRF_TRUSTED_ORIGINS": "https://mail.example.org",
    "DATABASE_URL": "postgres://mailfathom:secret@db.internal:5432/mailfathom",
    "REDIS_URL": "redis://redis.internal:6379/0",
    "MAILFATHOM_KEYRING": "Y2hhbmdlLW1lLXRoaXMtaXMtYS10ZXN0LWtleS0wMDA=",
    "MAILFATHOM_PUBLIC_BASE_URL": "https://mail.example.org",
    "MAILFATHOM_HTTPS": "true",
    "MAILFATHOM_TRUST_X_FORWARDED_PROTO": "true",
    "MAILFATHOM_HSTS_INCLUDE_SUBDOMAINS": "true",
    "MAILFATHOM_HSTS_PRELOAD": "true",
}


def check_deploy(**env: str) -> subprocess.CompletedProcess[str]:
    # Only what the test states: none of this session's DJANGO_* or MAILFATHOM_* values.
    inherited = {
        name: value
        for name, value in os.environ.items()
        if not name.startswith(("DJANGO_", "MAILFATHOM_", "DATABASE_", "REDIS_", "TEST_DATABASE"))
    }
    return subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        cwd=ROOT,
        env={**inherited, "DJANGO_SETTINGS_MODULE": "mailfathom.settings", **env},
        capture_output=True,
        text=True,
        timeout=180,
    )


def issues(result: subprocess.CompletedProcess[str]) -> list[str]:
    return re.findall(r"\(([\w.]+\.[WE]\d+)\)", result.stdout + result.stderr)


def test_documented_production_settings_pass_check_deploy_without_a_warning():
    result = check_deploy(**DOCUMENTED)
    assert issues(result) == []
    assert result.returncode == 0, result.stderr
    assert "no issues" in result.stdout


def test_deployment_doc_lists_every_setting_the_check_needs():
    doc = (ROOT / "docs" / "operations" / "deployment.md").read_text()
    missing = [name for name in DOCUMENTED if name not in doc]
    assert missing == []


def test_without_https_check_deploy_names_the_cookie_hsts_and_redirect_warnings():
    plain = {name: value for name, value in DOCUMENTED.items() if "HTTPS" not in name}
    found = set(issues(check_deploy(**plain)))
    assert {"security.W004", "security.W008", "security.W012", "security.W016"} <= found


def test_secure_settings_stay_off_on_the_embedded_default():
    from django.conf import settings

    assert settings.MAILFATHOM.https is False
    assert settings.SESSION_COOKIE_SECURE is False
    assert settings.CSRF_COOKIE_SECURE is False
    assert settings.SECURE_SSL_REDIRECT is False
    assert settings.SECURE_HSTS_SECONDS == 0
    assert settings.SECURE_PROXY_SSL_HEADER is None


def test_https_with_a_plain_http_public_base_url_is_warned_about(mailfathom_settings):
    from django.core.checks import run_checks

    mailfathom_settings(https=True, public_base_url="http://mail.example.org")
    assert "mailfathom.W030" in {message.id for message in run_checks()}


def test_hsts_preload_without_subdomains_is_warned_about(mailfathom_settings):
    from django.core.checks import run_checks

    mailfathom_settings(https=True, hsts_preload=True)
    assert "mailfathom.W031" in {message.id for message in run_checks()}


def test_the_embedded_default_raises_no_https_warning():
    from mailfathom.checks import check_https_posture

    assert check_https_posture() == []

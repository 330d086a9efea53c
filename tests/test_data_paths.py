"""Tests read data only from the repository: a clone alone passes its own tests."""

from __future__ import annotations

import re
from pathlib import Path

from tests import corpus

ROOT = Path(__file__).resolve().parents[1]
# What reaching for the team's corpus beside the checkout looks like in a test module.
OUTSIDE = re.compile(r"""shared/corpus|/\s*["']shared["']|MAILFATHOM_CORPUS_DIR|mail-dev\.tar\.gz""")


def test_every_corpus_path_resolves_inside_the_repository_and_exists():
    paths = {name: value for name, value in vars(corpus).items() if isinstance(value, Path)}
    assert set(paths) == {"DATA", "MAIL_SAMPLE", "TORTURE"}
    for name, path in paths.items():
        resolved = path.resolve(strict=True)  # a symlink out of the repository counts as outside
        assert resolved.is_relative_to(ROOT / "tests" / "data"), (name, resolved)


def test_no_file_under_tests_data_links_outside_the_repository():
    for path in (ROOT / "tests" / "data").rglob("*"):
        assert path.resolve().is_relative_to(ROOT), path


def test_no_test_module_reaches_for_the_corpus_beside_the_checkout():
    offenders = []
    for path in sorted((ROOT / "tests").rglob("*.py")):
        if path == Path(__file__).resolve() or path.parent.name == "data":
            continue  # this test names the patterns; build_mail_sample.py is the one reader by design
        if OUTSIDE.search(path.read_text()):
            offenders.append(str(path.relative_to(ROOT)))
    assert offenders == []

"""Every mypy suppression in the tree names its error code and says why on its line.

mypy itself refuses an ignore without a code and an unused one in the checked packages
(pyproject.toml); the reason is what this test adds, over tests/ and bench/ too.
"""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
_MARK = "type" + ": ignore"  # spelled apart so this file holds no suppression itself
_WITH_REASON = re.compile(re.escape(_MARK) + r"\[[a-z-]+(, [a-z-]+)*\]  # \S")


def test_every_type_ignore_names_its_code_and_a_reason():
    bare = []
    for path in ROOT.glob("**/*.py"):
        if ".venv" in path.parts or "var" in path.parts:
            continue
        for number, line in enumerate(path.read_text().splitlines(), start=1):
            if _MARK in line and not _WITH_REASON.search(line):
                bare.append(f"{path.relative_to(ROOT)}:{number}")
    assert bare == []

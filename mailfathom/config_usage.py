"""Every MAILFATHOM_* setting our code reads is declared: checked when a process starts.

Settings are attributes of MailFathomSettings, so a misspelt one would only raise
AttributeError on the line that reads it, perhaps long after startup and only in
production. This check reads our own source once at startup instead, finds every attribute
read on the settings object (`settings.MAILFATHOM.<name>`, or a variable annotated
`MailFathomSettings`) and refuses to start while one names no declared setting.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from mailfathom.core.config import MailFathomSettings

FIRST_PARTY = ("mailfathom", "accounts", "mailbox", "answering", "audit")
TYPE_NAME = MailFathomSettings.__name__
KNOWN = frozenset(name for name in dir(MailFathomSettings) if not name.startswith("_")) | frozenset(
    MailFathomSettings.__dataclass_fields__
)


@dataclass(frozen=True)
class UndeclaredRead:
    path: str
    line: int
    name: str


def _annotated_as_settings(annotation: ast.expr | None) -> bool:
    if isinstance(annotation, ast.Name):
        return annotation.id == TYPE_NAME
    if isinstance(annotation, ast.Attribute):
        return annotation.attr == TYPE_NAME
    if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):
        return annotation.value.strip() == TYPE_NAME
    if isinstance(annotation, ast.BinOp):  # MailFathomSettings | None
        return _annotated_as_settings(annotation.left) or _annotated_as_settings(annotation.right)
    return False


def _settings_names(function: ast.FunctionDef | ast.AsyncFunctionDef) -> set[str]:
    """The local names of `function` that hold the settings object, by their annotation."""
    arguments = function.args
    names = {
        argument.arg
        for argument in (*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs)
        if _annotated_as_settings(argument.annotation)
    }
    for node in ast.walk(function):
        if (
            isinstance(node, ast.AnnAssign)
            and isinstance(node.target, ast.Name)
            and _annotated_as_settings(node.annotation)
        ):
            names.add(node.target.id)
    return names


def _reads(tree: ast.Module) -> Iterator[tuple[int, str]]:
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Attribute)
            and node.value.attr == "MAILFATHOM"
        ):
            yield node.lineno, node.attr
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            held = _settings_names(node)
            if not held:
                continue
            for inner in ast.walk(node):
                if (
                    isinstance(inner, ast.Attribute)
                    and isinstance(inner.value, ast.Name)
                    and inner.value.id in held
                ):
                    yield inner.lineno, inner.attr


def undeclared_reads(root: Path) -> list[UndeclaredRead]:
    """Every read under `root`'s first-party packages that names no declared setting."""
    found = []
    for package in FIRST_PARTY:
        for path in sorted((root / package).rglob("*.py")):
            if "migrations" in path.parts:
                continue
            source = path.read_text(encoding="utf-8")
            if "MAILFATHOM" not in source and TYPE_NAME not in source:
                continue  # parsing is most of the cost; most modules read no setting
            tree = ast.parse(source, filename=str(path))
            for line, name in _reads(tree):
                if name not in KNOWN:
                    found.append(UndeclaredRead(str(path.relative_to(root)), line, name))
    return found

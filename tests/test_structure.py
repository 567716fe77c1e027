"""The package's shape: functions that fit on a screen or two, and modules that share
only public names."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import mgapsp

PACKAGE = Path(mgapsp.__file__).parent
MODULES = sorted(PACKAGE.rglob("*.py"))
#: most lines of code of one function, its docstring aside
LONGEST = 120


def _functions(tree):
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield node


def _code_lines(fn) -> int:
    lines = fn.end_lineno - fn.lineno + 1
    first = fn.body[0]
    if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) \
            and isinstance(first.value.value, str):
        lines -= first.end_lineno - first.lineno + 1
    return lines


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_no_function_is_longer_than_it_reads(path):
    tree = ast.parse(path.read_text())
    long = {fn.name: _code_lines(fn) for fn in _functions(tree)
            if _code_lines(fn) > LONGEST}
    assert not long, f"functions over {LONGEST} lines: {long}"


@pytest.mark.parametrize("path", [p for p in MODULES if "cuda" not in p.parts],
                         ids=lambda p: str(p.relative_to(PACKAGE)))
def test_modules_import_only_public_names_of_each_other(path):
    """``from .x import _name`` means a module reaches into another's insides; what
    modules share is public (mgapsp.cuda's loader helpers are still private there)."""
    tree = ast.parse(path.read_text())
    private = [f"{node.module}.{alias.name}" for node in ast.walk(tree)
               if isinstance(node, ast.ImportFrom) and node.level > 0
               for alias in node.names if alias.name.startswith("_")]
    assert not private, private

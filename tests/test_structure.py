"""The package's shape: functions that fit on a screen or two, modules that share
only public names, and import contracts as wide as their titles."""

from __future__ import annotations

import ast
import configparser
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


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_modules_use_only_public_names_of_each_other(path):
    """``from .x import _name`` or ``x._name`` (``x`` a module of the package) means a
    module reaches into another's insides; what modules share is public."""
    tree = ast.parse(path.read_text())
    private = [f"{node.module}.{alias.name}" for node in ast.walk(tree)
               if isinstance(node, ast.ImportFrom) and node.level > 0
               for alias in node.names
               if alias.name.startswith("_") and not alias.name.endswith("__")]
    siblings = {alias.asname or alias.name for node in ast.walk(tree)
                if isinstance(node, ast.ImportFrom) and node.level > 0
                and node.module is None for alias in node.names}     # from . import fw
    private += [f"{node.value.id}.{node.attr}" for node in ast.walk(tree)
                if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                and node.value.id in siblings and node.attr.startswith("_")
                and not node.attr.startswith("__")]
    assert not private, private


#: the modules each "only ..." contract lets import its package (its title names them),
#: and the single imports it lets through
ONLY = {"cupy": (["mgapsp.cuda"], ["mgapsp.jobs.floyd_warshall_slabs -> cupy", "mgapsp.gpu_count -> cupy"]),
        "networkx": (["mgapsp.nxbackend"], [])}


def _module_names():
    for path in MODULES:
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        if len(parts) > 1:          # the root package holds them all
            yield ".".join(parts)


@pytest.mark.parametrize("name", sorted(ONLY))
def test_an_only_contract_covers_every_other_module(name):
    """Issue 53: a module added to the package falls under the contracts that say only
    some modules may import CuPy (or NetworkX): every module is one of their sources or
    one the title allows, and nothing else is let through."""
    config = configparser.ConfigParser()
    config.read(PACKAGE.parent / ".importlinter")
    contract = config[f"importlinter:contract:{name}"]
    sources = contract["source_modules"].split()
    allowed, ignored = ONLY[name]

    def under(module, roots):
        return any(module == r or module.startswith(r + ".") for r in roots)
    left = [m for m in _module_names() if not under(m, sources) and not under(m, allowed)]
    assert not left, f"{name}: modules in no source list: {left}"
    assert not [m for m in _module_names() if under(m, sources) and under(m, allowed)]
    lines = [line.strip() for line in contract.get("ignore_imports", "").splitlines()]
    assert [line for line in lines if line] == ignored


def test_the_benchmarks_are_a_package_without_path_edits():
    """Issue 53: ``bench`` is a package run as ``python -m bench.NAME`` from the root; a
    script that edits ``sys.path`` would import what the path happens to hold."""
    bench = PACKAGE.parent / "bench"
    assert (bench / "__init__.py").is_file() and (bench / "peers" / "__init__.py").is_file()
    edits = []
    for path in sorted(bench.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (isinstance(node, ast.Attribute) and node.attr == "path"
                    and isinstance(node.value, ast.Name) and node.value.id == "sys"):
                edits.append(f"{path.relative_to(bench.parent)}:{node.lineno}")
    assert not edits, f"sys.path named in {edits}"

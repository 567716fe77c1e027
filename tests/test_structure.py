"""The package's shape: functions that fit on a screen or two, modules that share
only public names, and import contracts as wide as their titles."""

from __future__ import annotations

import ast
import configparser
import subprocess
import sys
from pathlib import Path

import pytest

import mgapsp

PACKAGE = Path(mgapsp.__file__).parent
MODULES = sorted(PACKAGE.rglob("*.py"))
BENCH = PACKAGE.parent / "bench"
#: the repository's own packages, which a benchmark may always import
OURS = ("bench", "mgapsp", "tests", "workflows")
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
    script that edits ``sys.path`` would import what the path happens to hold.  Read as
    text: the code a script hands a child process (``python -c``) counts too."""
    assert (BENCH / "__init__.py").is_file() and (BENCH / "peers" / "__init__.py").is_file()
    edits = [f"{path.relative_to(BENCH.parent)}:{number}"
             for path in sorted(BENCH.rglob("*.py"))
             for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
             if "sys.path" in line or "addsitedir" in line]
    assert not edits, f"sys.path named in {edits}"


def _runs_nothing(node) -> bool:
    if isinstance(node, ast.If):        # the guard, and nothing else at the top
        return ast.unparse(node.test) == "__name__ == '__main__'"
    if isinstance(node, ast.Expr):      # the docstring
        return isinstance(node.value, ast.Constant)
    return isinstance(node, (ast.Import, ast.ImportFrom, ast.FunctionDef,
                             ast.AsyncFunctionDef, ast.ClassDef, ast.Assign, ast.AnnAssign))


def test_the_benchmarks_work_only_under_their_main_guard():
    """Issue 53: at the top of a benchmark stand imports, definitions, assignments and
    ``if __name__ == "__main__":``, so importing ``bench.NAME`` (as other benchmarks and the
    tests do) runs nothing, and one that starts Dask's worker processes keeps its guard."""
    loose, unguarded = [], []
    for path in sorted(BENCH.rglob("*.py")):
        body = ast.parse(path.read_text(encoding="utf-8")).body
        name = str(path.relative_to(BENCH.parent))
        loose += [f"{name}:{node.lineno}" for node in body if not _runs_nothing(node)]
        if any(isinstance(node, ast.FunctionDef) and node.name == "main" for node in body) \
                and not any(isinstance(node, ast.If) for node in body):
            unguarded.append(name)
    assert not loose, f"work done at import: {loose}"
    assert not unguarded, f"a main() without the __main__ guard: {unguarded}"


def test_every_benchmark_imports_as_bench_name():
    """Issue 53: each script imports as ``bench.NAME`` from the repository's root, as
    ``python -m bench.NAME`` runs it, in a fresh process; a module of another project may
    be missing here (CuPy, where there is no GPU), none of ours."""
    names = [".".join(path.relative_to(BENCH.parent).with_suffix("").parts)
             for path in sorted(BENCH.rglob("*.py")) if path.name != "__init__.py"]
    code = ("import importlib\n"
            f"for name in {names!r}:\n"
            "    try:\n"
            "        importlib.import_module(name)\n"
            "    except ModuleNotFoundError as e:\n"
            f"        if (e.name or '').split('.')[0] in {OURS!r}:\n"
            "            print(name, repr(e))\n"
            "    except Exception as e:\n"
            "        print(name, repr(e))\n")
    proc = subprocess.run([sys.executable, "-c", code], cwd=BENCH.parent,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0 and not proc.stdout, proc.stdout + proc.stderr
    assert len(names) > 20 and "bench.timing" in names

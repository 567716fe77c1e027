"""Every cross-reference in the package's docstrings and comments (``:mod:``, ``:func:``,
``:class:``, ``:meth:``, ``:data:``, ``:attr:``, ``:exc:``) names something that exists.

Resolved from the source, without importing it (the GPU modules need CuPy): a module is
a file or package of ``mgapsp`` (or ``_mgapsp_nx``), a name one its module defines or
imports at the top (or a member of such a class).  A reference may be absolute, relative
to its module's package (``.driver``), or a name of its own module, its package or
``mgapsp``, as Sphinx looks it up.  Names of other packages are checked by importing them
where they are installed.
"""

from __future__ import annotations

import ast
import builtins
import importlib
import re
from functools import lru_cache
from pathlib import Path

import pytest

from mgapsp.config import KNOBS

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("mgapsp", "_mgapsp_nx")
ROLE = re.compile(r":(?:mod|func|class|meth|data|attr|exc):`~?([^`<>]+?)`")


def _modules() -> dict[str, Path]:
    found = {}
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            parts = path.relative_to(ROOT).with_suffix("").parts
            name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            found[name] = path
    return found


MODULES = _modules()


@lru_cache(maxsize=None)
def _names(module: str) -> dict[str, set]:
    """The module's top-level names, each with the members it has where it is a class."""
    tree = ast.parse(MODULES[module].read_text())
    names: dict[str, set] = {}
    for node in tree.body:
        targets = []
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            targets = [node.name]
        elif isinstance(node, ast.ClassDef):
            members = set()
            for item in node.body:
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                    members.add(item.name)
                elif isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
                    members.add(item.target.id)
                elif isinstance(item, ast.Assign):
                    members |= {t.id for t in item.targets if isinstance(t, ast.Name)}
            for item in ast.walk(node):     # attributes set on self
                if (isinstance(item, ast.Attribute) and isinstance(item.value, ast.Name)
                        and item.value.id == "self" and isinstance(item.ctx, ast.Store)):
                    members.add(item.attr)
            names[node.name] = members
            continue
        elif isinstance(node, ast.Assign):
            targets = [t.id for t in node.targets if isinstance(t, ast.Name)]
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            targets = [node.target.id]
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            targets = [(a.asname or a.name).split(".")[0] for a in node.names]
        elif isinstance(node, (ast.If, ast.Try)):
            for sub in ast.walk(node):
                if isinstance(sub, (ast.FunctionDef, ast.ClassDef)):
                    targets.append(sub.name)
                elif isinstance(sub, (ast.Import, ast.ImportFrom)):
                    targets += [(a.asname or a.name).split(".")[0] for a in sub.names]
        for t in targets:
            names.setdefault(t, set())
    # names a package makes on first use (a module __getattr__): those it exports, in
    # __all__ as a list, or as the keys of the table it is made from
    tables = {t.id: node.value for node in tree.body if isinstance(node, ast.Assign)
              for t in node.targets if isinstance(t, ast.Name)}
    exported = tables.get("__all__")
    if isinstance(exported, ast.Call) and exported.args and isinstance(exported.args[0],
                                                                        ast.Name):
        exported = tables.get(exported.args[0].id)
    items = (exported.elts if isinstance(exported, (ast.List, ast.Tuple)) else
             exported.keys if isinstance(exported, ast.Dict) else [])
    for item in items:
        if isinstance(item, ast.Constant) and isinstance(item.value, str):
            names.setdefault(item.value, set())
    return names


def _ours(target: str) -> bool:
    """Whether ``target`` (absolute) names a module of ours or something in one."""
    if target in MODULES:
        return True
    parts = target.split(".")
    for cut in range(len(parts) - 1, 0, -1):
        module = ".".join(parts[:cut])
        if module in MODULES:
            rest = parts[cut:]
            names = _names(module)
            if rest[0] not in names:
                return False
            return len(rest) == 1 or (len(rest) == 2 and (rest[1] in names[rest[0]]
                                                          or not names[rest[0]]))
    return False


def _theirs(target: str) -> bool | None:
    """Whether another package's ``target`` exists: None where it is not installed."""
    parts = target.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for attr in parts[cut:]:
            if not hasattr(obj, attr):
                return False
            obj = getattr(obj, attr)
        return True
    return None


def _candidates(ref: str, module: str) -> list[str]:
    package = module if MODULES[module].name == "__init__.py" else module.rpartition(".")[0]
    if ref.startswith("."):
        dots = len(ref) - len(ref.lstrip("."))
        base = package.split(".")
        base = base[:len(base) - (dots - 1)]
        return [".".join(base + [ref.lstrip(".")])]
    return [ref, f"{module}.{ref}", f"{package}.{ref}", f"mgapsp.{ref}"]


def _unresolved(ref: str, module: str) -> bool:
    candidates = _candidates(ref, module)
    if any(_ours(c) for c in candidates):
        return False
    if ref.split(".")[0] in PACKAGES or ref.startswith("."):
        return True
    if "." not in ref:      # a member of a class of this module, or a builtin
        return not (any(ref in members for members in _names(module).values())
                    or hasattr(builtins, ref))
    return _theirs(ref) is False


def _references():
    for module, path in sorted(MODULES.items()):
        for number, line in enumerate(path.read_text().splitlines(), 1):
            for ref in ROLE.findall(line):
                yield module, path, number, ref.strip().rstrip("()")


def test_the_references_are_found():
    refs = list(_references())
    assert len(refs) > 300          # the scan reads what it should
    bad = [f"{path.relative_to(ROOT)}:{number}: {ref}" for module, path, number, ref in refs
           if _unresolved(ref, module)]
    assert not bad, "\n".join(bad)


@pytest.mark.parametrize("ref, module, found", [
    ("mgapsp.apsp", "mgapsp.cli", True),
    (".driver", "mgapsp.jobs.cluster", True),
    ("JobReport", "mgapsp.jobs.report", True),
    ("mgapsp.jobs.report.JobReport.setup", "mgapsp.cli", True),
    ("mgapsp.no_such_thing", "mgapsp.cli", False),
    (".no_such_module", "mgapsp.jobs.cluster", False),
    ("distributed.Client", "mgapsp.cli", True),
])
def test_the_resolver_tells_found_from_missing(ref, module, found):
    assert _unresolved(ref, module) is not found


DOC_NAME = re.compile(r"`((?:mgapsp|_mgapsp_nx)(?:\.\w+)+)(?:\(\))?`")
DOC_PATH = re.compile(r"`((?:mgapsp|_mgapsp_nx|bench|tests|workflows|cluster|kernels|docs)"
                      r"/[\w./-]+\.\w+)`")


#: dotted names the docs use that are not Python's: the codec's name in zarr.json
NOT_PYTHON = {"mgapsp.planes"}


def test_the_docs_name_what_exists():
    """The README and docs/ name modules, functions and files of the repository as
    `mgapsp.jobs.driver.run_job` or `bench/startup.py`: each one exists (a dotted name
    that is a knob of the configuration, ``mgapsp.phast.order``, is not a Python name)."""
    bad, seen = [], 0
    for doc in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        for number, line in enumerate(doc.read_text().splitlines(), 1):
            for name in DOC_NAME.findall(line):
                seen += 1
                if name in NOT_PYTHON or name.removeprefix("mgapsp.") in KNOBS:
                    continue
                if not _ours(name) and _theirs(name) is not True:
                    bad.append(f"{doc.name}:{number}: {name}")
            for path in DOC_PATH.findall(line):
                seen += 1
                if "<" not in path and "*" not in path and not (ROOT / path).exists():
                    bad.append(f"{doc.name}:{number}: {path}")
    assert seen > 20
    assert not bad, "\n".join(bad)


def test_the_guide_lists_every_knob():
    """docs/configuration.md names every knob of mgapsp.config.KNOBS with its older
    variable: the settings a user can find are all there are."""
    section = (ROOT / "docs" / "configuration.md").read_text()
    for key, knob in KNOBS.items():
        assert f"`{key}`" in section, key
        if knob.alias:
            assert f"`{knob.alias}`" in section, (key, knob.alias)
        if knob.user:       # the table, not the tuning list
            assert f"| `{key}` |" in section, key


def test_the_guide_lists_every_algorithm():
    """The command line's page lists every registered algorithm for ``--algorithm``."""
    from mgapsp import algorithms

    line = next(x for x in (ROOT / "docs" / "cli.md").read_text().splitlines()
                if x.startswith("- `--algorithm auto|"))
    listed = line.split("`")[1].removeprefix("--algorithm ").split("|")
    assert listed == ["auto", *algorithms.names()]


def test_apsp_lists_every_algorithm():
    """``apsp``'s docstring names the registered algorithms, no more, no fewer."""
    from mgapsp import algorithms, api

    line = next(x for x in api.apsp.__doc__.splitlines()
                if x.strip().startswith("algorithm : {"))
    listed = re.findall(r'"([\w-]+)"', line)
    assert listed == ["auto", *algorithms.names()]

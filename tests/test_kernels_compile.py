"""The CUDA kernel sources compile with nvcc, and the kernel layer keeps its rules.

Runs without a GPU: nvcc compiles for sm_90 on any machine.  Where nvcc is not on
PATH the compile tests skip, except under CI (the variable ``CI`` set), where they
fail, so that a CI image without the CUDA compiler cannot pass silently.
"""

from __future__ import annotations

import ast
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from mgapsp.cuda import bellman_ford, loader

REPO = Path(__file__).resolve().parents[1]
KERNEL_DIR = REPO / "kernels"
KERNELS = sorted(KERNEL_DIR.glob("*.cu"))
ARCH = "sm_90"


def _nvcc() -> str:
    path = shutil.which("nvcc")
    if path is None:
        if os.environ.get("CI"):
            pytest.fail("nvcc is not on PATH, but CI is set: the kernel compile check must run")
        pytest.skip("nvcc is not on PATH")
    return path


def test_there_are_kernels():
    assert KERNELS, f"no *.cu files in {KERNEL_DIR}"
    assert (KERNEL_DIR / loader.KERNEL_FILE) in KERNELS


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["-c", "--ptx"])
@pytest.mark.parametrize("source", KERNELS, ids=lambda p: p.name)
def test_kernel_compiles(source: Path, mode: str, tmp_path: Path):
    out = tmp_path / (source.stem + (".o" if mode == "-c" else ".ptx"))
    cmd = [_nvcc(), f"-arch={ARCH}", "-std=c++17", mode, "-o", str(out), str(source)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, (
        f"{' '.join(cmd)} failed with code {proc.returncode}:\n{proc.stderr}{proc.stdout}"
    )
    assert out.stat().st_size > 0


@pytest.mark.parametrize("source", KERNELS, ids=lambda p: p.name)
def test_kernel_is_self_contained(source: Path):
    """Only #include "x" of files in kernels/: what NVRTC compiles (the loader's text,
    local includes inlined) includes nothing, since NVRTC has no std headers."""
    text = source.read_text(encoding="utf-8")
    for line in text.splitlines():
        if line.lstrip().startswith("#include"):
            m = re.fullmatch(r'#include "([\w.-]+)"\s*', line.strip())
            assert m and (KERNEL_DIR / m.group(1)).is_file(), f"{source.name}: {line}"
    inlined = loader.kernel_source(source.name)
    assert not [ln for ln in inlined.splitlines() if ln.lstrip().startswith("#include")]
    assert len(inlined) >= len(text)


def _blosc_names():
    from mgapsp.cuda import blosc

    return blosc.KERNEL_FILE, blosc.KERNEL_NAMES


def _phast_names():
    from mgapsp.cuda import phast

    return phast.KERNEL_FILE, phast.KERNEL_NAMES


def _brandes_names():
    from mgapsp.cuda import brandes

    return brandes.KERNEL_FILE, brandes.KERNEL_NAMES


@pytest.mark.parametrize("names", [lambda: (loader.KERNEL_FILE, bellman_ford.KERNEL_NAMES),
                                   _blosc_names, _phast_names, _brandes_names],
                         ids=["bellman_ford", "blosc_lz4", "phast", "brandes"])
def test_launched_kernels_are_defined(names):
    file, launched = names()
    text = loader.kernel_source(file)
    # a kernel is defined as such, or by a macro whose name pastes its arguments
    # (``void bf_init_m##M(...)``), called at the start of a line
    defined = set(re.findall(r'extern\s+"C"\s+__global__\s+void\s+'
                             r'(?:__launch_bounds__\([^)]*\)\s+)?(\w+)\s*\(', text))
    for macro, params, body in re.findall(r'#define (\w+)\(([^)]*)\)((?:.*\\\n)*.*)', text):
        names = re.findall(r'void\s+((?:\w+\s*##\s*)+\w+)\s*\(', body)
        params = [p.strip() for p in params.split(",")]
        for call in re.findall(rf'^{macro}\(([^)]*)\)\s*$', text, re.M):
            args = dict(zip(params, (a.strip() for a in call.split(","))))
            for name in names:
                defined.add("".join(args.get(part.strip(), part.strip())
                                    for part in name.split("##")))
    missing = set(launched) - defined
    assert not missing, f"the kernel layer launches kernels that {file} lacks: {missing}"


def test_kernel_source_is_found():
    """The loader finds the source (package data, else the checkout's kernels/)."""
    text = loader.kernel_source()
    raw = (KERNEL_DIR / loader.KERNEL_FILE).read_text(encoding="utf-8")
    header = (KERNEL_DIR / "sssp_state.cuh").read_text(encoding="utf-8")
    assert text == raw.replace('#include "sssp_state.cuh"\n', header)


def _module_level_imports(node):
    """Import statements that run at import time (not inside functions)."""
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
        return
    if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
        return
    if isinstance(node, ast.Import):
        yield node, [a.name for a in node.names]
    elif isinstance(node, ast.ImportFrom):
        yield node, [node.module or ""]
    for child in ast.iter_child_nodes(node):
        yield from _module_level_imports(child)


@pytest.mark.parametrize("module", sorted(
    str(p.relative_to(REPO)) for folder in ("cuda", "backends")
    for p in (REPO / "mgapsp" / folder).glob("*.py")))
def test_no_cupy_at_import(module: str):
    """CuPy is imported inside functions only: importing creates no CUDA context."""
    tree = ast.parse((REPO / module).read_text(encoding="utf-8"))
    for node, names in _module_level_imports(tree):
        bad = [nm for nm in names if nm.split(".")[0] in ("cupy", "cupyx")]
        assert not bad, f"{module} imports {bad} at module level (line {node.lineno})"


def test_choose_method():
    """Floyd-Warshall's method from the weights (host NumPy only, so it runs without a
    GPU; moved here from the gpu-marked tests/test_gpu_floyd_warshall.py)."""
    import numpy as np

    from mgapsp.cuda import floyd_warshall as fw

    F32, F64 = np.dtype(np.float32), np.dtype(np.float64)
    ints = np.array([0.0, 3.0, 7.0])
    assert fw.choose_fw_method(F32, ints, 100) == "int16x2-dpx"          # 99*7 fits int16
    assert fw.choose_fw_method(F64, ints, 100) == "int16x2-dpx"
    big = np.array([0.0, 5000.0])                                         # > SPECULATE max
    assert fw.choose_fw_method(F32, big, 100) == "int32-dpx"
    neg = np.array([-30.0, 30.0])                                         # 999*30 > 8191
    assert fw.choose_fw_method(F32, neg, 1000) == "int32-dpx"
    assert fw.choose_fw_method(F32, np.array([-3.0, 4.0]), 1000) == "int16x2-dpx"
    assert fw.choose_fw_method(F32, np.array([0.5, 2.0]), 10) == "fp32"
    assert fw.choose_fw_method(F64, np.array([0.5, 2.0]), 10) == "fp64"
    huge = np.array([-1e6, 1e6])                                          # bound > 2**29
    assert fw.choose_fw_method(F64, huge, 10**4) == "fp64"
    assert fw.choose_fw_method(F32, np.array([]), 5) == "int16x2-dpx"

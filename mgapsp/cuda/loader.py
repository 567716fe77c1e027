"""Kernel sources and their compilation: the only place CuPy compiles code.

Kernel sources live in ``kernels/*.cu`` (shipped inside the wheel as ``mgapsp/kernels``,
see ``force-include`` in ``pyproject.toml``).  They are compiled with CuPy's
``RawModule`` on first use, once per device; importing this module imports no CuPy and
creates no CUDA context.
"""

from __future__ import annotations

import re
from importlib import resources
from pathlib import Path

from ..errors import UnsupportedError

#: the kernel file of the batched Bellman-Ford (the default of the loaders below)
KERNEL_FILE = "bellman_ford.cu"
_COMPILE_OPTIONS = ("-std=c++17",)
BLOCK_THREADS = 256


#: ``#include "file"`` of another file of ``kernels/`` (nvcc finds it beside the
#: including file; NVRTC compiles a string, so :func:`kernel_source` inlines it).
_LOCAL_INCLUDE = re.compile(r'^#include "([\w.-]+)"[ \t]*\n', re.M)


def kernel_source(name: str = KERNEL_FILE) -> str:
    """Text of ``kernels/<name>`` with its local ``#include "..."`` files inlined."""
    return _LOCAL_INCLUDE.sub(lambda m: kernel_source(m.group(1)), _kernel_file(name))


def _kernel_file(name: str) -> str:
    """Text of ``kernels/<name>``: from the installed package, else the source tree."""
    try:
        res = resources.files("mgapsp") / "kernels" / name
        if res.is_file():
            return res.read_text(encoding="utf-8")
    except (FileNotFoundError, NotADirectoryError, ModuleNotFoundError):
        pass
    path = Path(__file__).resolve().parents[2] / "kernels" / name
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise FileNotFoundError(
            f"kernel source {name!r} is neither in the installed package "
            f"(mgapsp/kernels) nor at {path}"
        ) from None


def cupy_module():
    try:
        import cupy
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise UnsupportedError(
            "the gpu backend needs CuPy: pip install 'mgapsp[cuda13]' (or [cuda12])"
        ) from exc
    return cupy


_compilers: dict = {}
_functions: dict = {}
_sm_counts: dict = {}


def _module(file: str = KERNEL_FILE, options: tuple[str, ...] = ()):
    """The compiled RawModule of ``kernels/<file>`` for the current device (compiled
    once per device, file and extra NVRTC ``options``, at first use)."""
    key = (file, options)
    if key not in _compilers:
        cupy = cupy_module()

        @cupy.memoize(for_each_device=True)
        def compile_module():
            return cupy.RawModule(code=kernel_source(file),
                                  options=_COMPILE_OPTIONS + tuple(options))

        _compilers[key] = compile_module
    return _compilers[key]()


def get_kernel(name: str, file: str = KERNEL_FILE, options: tuple[str, ...] = ()):
    key = (device_id(), file, name, options)
    fn = _functions.get(key)
    if fn is None:
        fn = _functions[key] = _module(file, options).get_function(name)
    return fn


def grid_blocks(total: int, threads: int = BLOCK_THREADS) -> int:
    return max(1, -(-int(total) // threads))


def sm_count() -> int:
    dev = device_id()
    if dev not in _sm_counts:
        attrs = cupy_module().cuda.Device(dev).attributes
        _sm_counts[dev] = int(attrs["MultiProcessorCount"])
    return _sm_counts[dev]


def persistent_grid(fn, threads: int = BLOCK_THREADS) -> int:
    """Blocks that fit on the device at once: the grid of a kernel whose warps stride
    over their work (one wave, no tail of late blocks)."""
    try:
        regs = max(1, int(fn.num_regs))
    except Exception:  # noqa: BLE001 - attribute missing in some CuPy versions
        regs = 64
    per_sm = max(1, min(2048 // threads, 65536 // (regs * threads)))
    return sm_count() * per_sm


def device_id() -> int:
    return int(cupy_module().cuda.runtime.getDevice())

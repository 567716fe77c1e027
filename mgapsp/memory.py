"""Host memory: how much this process can still allocate (the host's available
memory, bounded by a memory cgroup or an address-space limit where one applies; sizes
are checked against it before anything that large is allocated), and large arrays made
ready to be written at memory speed.

A fresh array's pages are faulted in on first write, at a few GB/s for one thread: the
copy of a result into it waits on the kernel, not on the memory.  Several threads
touching disjoint pages fault them in together (on a 16-core device host, 263 MB took
64 ms from one thread and 8 ms from sixteen).
"""

from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from .errors import GraphFormatError, format_bytes

__all__ = ["available_memory", "memory_limit", "check_memory", "fresh_array",
           "host_threads", "host_pool", "page_spans", "touch_spans"]

#: arrays smaller than this are not worth touching from several threads
TOUCH_BYTES = 16 * 2**20
#: a thread's share of a copy or a touch: at least this (and whole pages)
SPAN_BYTES = 2 * 2**20

#: Below this estimate nothing is checked (no need to ask the system).
_CHECK_ABOVE = 2**28

_POOL: ThreadPoolExecutor | None = None
_POOL_LOCK = threading.Lock()


def host_threads() -> int:
    """Threads that write host memory: the cores this process may run on, at most 12
    (beyond that the page faults of one array contend in the kernel)."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):       # pragma: no cover - not Linux
        cpus = os.cpu_count() or 1
    return max(1, min(12, cpus))


def host_pool() -> ThreadPoolExecutor:
    """The process's pool of :func:`host_threads` threads for copies and touches."""
    global _POOL
    with _POOL_LOCK:
        if _POOL is None:
            _POOL = ThreadPoolExecutor(host_threads(), thread_name_prefix="mgapsp-host")
        return _POOL


def page_spans(total: int, parts: int, align: int = 4096) -> list[tuple[int, int]]:
    """``[0, total)`` cut into at most ``parts`` spans of whole pages, each at least
    :data:`SPAN_BYTES` long, in order."""
    parts = max(1, min(parts, total // SPAN_BYTES or 1))
    step = -(-total // parts)
    step = -(-step // align) * align
    return [(lo, min(total, lo + step)) for lo in range(0, total, step)]


def touch_spans(arr: np.ndarray) -> list:
    """Start touching the pages of the C-contiguous ``arr`` (writing zeros) from the
    host pool; returns the futures, none for a small array."""
    if arr.nbytes < TOUCH_BYTES:
        return []
    flat = arr.reshape(-1).view(np.uint8)
    return [host_pool().submit(flat[lo:hi].fill, 0)
            for lo, hi in page_spans(flat.nbytes, host_threads())]


def fresh_array(shape, dtype) -> np.ndarray:
    """``numpy.empty(shape, dtype)`` with its pages already faulted in (zeros)."""
    arr = np.empty(shape, dtype=dtype)
    for fut in touch_spans(arr):
        fut.result()
    return arr


def _meminfo_available() -> int | None:
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def _cgroup_available() -> int | None:
    """What the memory cgroup of this process still allows (v2, else v1), or None."""
    for limit_file, usage_file in (
            ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory.current"),
            ("/sys/fs/cgroup/memory/memory.limit_in_bytes",
             "/sys/fs/cgroup/memory/memory.usage_in_bytes")):
        try:
            with open(limit_file) as fh:
                text = fh.read().strip()
            if text == "max":
                return None
            limit = int(text)
            if limit >= 2**60:          # v1's "no limit"
                return None
            with open(usage_file) as fh:
                return max(limit - int(fh.read().strip()), 0)
        except (OSError, ValueError):
            continue
    return None


def _rlimit_available() -> int | None:
    """What this process's address-space (or data) limit still allows, or None."""
    try:
        import resource
    except ImportError:                 # pragma: no cover - not POSIX
        return None
    left = None
    for name, field in (("RLIMIT_AS", 0), ("RLIMIT_DATA", 5)):
        kind = getattr(resource, name, None)
        if kind is None:
            continue
        soft, _ = resource.getrlimit(kind)
        if soft == resource.RLIM_INFINITY or soft < 0:
            continue
        try:                            # /proc/self/statm: size ... data, in pages
            with open("/proc/self/statm") as fh:
                used = int(fh.read().split()[field]) * os.sysconf("SC_PAGE_SIZE")
        except (OSError, ValueError, IndexError):
            used = 0
        room = max(int(soft) - used, 0)
        left = room if left is None else min(left, room)
    return left


def memory_limit() -> tuple[int, str]:
    """Bytes this process can still allocate, and who sets that bound."""
    host = None
    try:
        import psutil

        host = int(psutil.virtual_memory().available)
    except Exception:                   # no psutil, or it cannot tell
        host = _meminfo_available()
    if host is None:
        try:
            host = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_AVPHYS_PAGES")
        except (OSError, ValueError):   # pragma: no cover - exotic systems
            host = 2**62
    best = (host, "this machine has")
    for room, who in ((_cgroup_available(), "this process's memory cgroup leaves"),
                      (_rlimit_available(), "this process's memory limit (ulimit) leaves")):
        if room is not None and room < best[0]:
            best = (room, who)
    return best


def available_memory() -> int:
    """Bytes of memory this process can still allocate now: the host's available memory
    (psutil, else /proc/meminfo, else sysconf), less where a memory cgroup or an
    address-space rlimit bounds the process."""
    return memory_limit()[0]


def check_memory(what: str, needed: int, *, where: str | None = None,
                 line: int | None = None, subject: str = "the graph") -> None:
    """Raise :class:`GraphFormatError` ``"<what>: <subject> would need X, this machine
    has Y available"`` (``where:line:`` first) when ``needed`` bytes exceed
    :func:`available_memory`.  Small amounts pass without asking the system."""
    if needed <= _CHECK_ABOVE:
        return
    free, who = memory_limit()
    if needed > free:
        raise GraphFormatError(f"{what}: {subject} would need {format_bytes(needed)}, "
                               f"{who} {format_bytes(free)} available", where, line)

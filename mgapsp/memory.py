"""How much memory this process can still allocate: the host's available memory,
bounded by a memory cgroup or an address-space limit where one applies.  Sizes are
checked against it before anything that large is allocated."""

from __future__ import annotations

import os

__all__ = ["available_memory", "memory_limit"]


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

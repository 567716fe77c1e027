"""Wall clock as the benchmarks report it: a first call apart (what a process calling
once pays), then the median of more calls, each after the last result is freed."""

from __future__ import annotations

import statistics
import time


def first_then_median(fn, repeats: int):
    """``(median seconds of `repeats` calls, first call's seconds, every call's seconds,
    the last result)``."""
    t = time.perf_counter()
    out = fn()
    first = time.perf_counter() - t
    times = []
    for _ in range(repeats):
        out = None          # the last result's memory is free for this one
        t = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times), first, times, out


def median_wall(fn, repeats: int):
    """``(median seconds of `repeats` calls after a first one, the last result)``:
    :func:`first_then_median` where the first call is only a warm-up."""
    seconds, _first, _times, out = first_then_median(fn, repeats)
    return seconds, out

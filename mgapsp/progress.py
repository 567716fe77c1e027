"""The progress line of a job: rows done, rows/s and time left on standard error,
driven by the job's own completion events (``mgapsp run``, ``apsp(progress=True)``);
Dask's ``ProgressBar`` prints nothing under a distributed client."""

from __future__ import annotations

import sys
import time

__all__ = ["ProgressBar"]


class ProgressBar:
    """Rows done, rows/s and time left, on one line of a terminal (or every 10%)."""

    def __init__(self, enabled=True, stream=None):
        self.stream = stream or sys.stderr
        self.enabled = enabled
        self.tty = self.stream.isatty()
        self.total = 0
        self.t0 = time.perf_counter()
        self.last_step = -1

    def start(self, total):
        self.total = total
        self.t0 = time.perf_counter()

    def update(self, done: int, rows_run: int) -> None:
        """``done`` rows of the total are stored, ``rows_run`` of them by this run (a
        resumed job's earlier rows count as done, not in the rate)."""
        if not self.enabled or not self.total:
            return
        elapsed = time.perf_counter() - self.t0
        rate = rows_run / elapsed if elapsed > 0 else 0.0
        left = (self.total - done) / rate if rate > 0 else float("inf")
        frac = done / self.total
        text = (f"  {done:,}/{self.total:,} rows ({frac:.0%}) {rate:,.0f} rows/s, "
                f"{_fmt_time(left)} left")
        if self.tty:
            width = 24
            filled = int(width * frac)
            self.stream.write(f"\r[{'#' * filled}{'.' * (width - filled)}]{text}   ")
            self.stream.flush()
        elif int(frac * 10) > self.last_step:
            self.last_step = int(frac * 10)
            self.stream.write(text + "\n")

    def finish(self):
        if self.enabled and self.tty:
            self.stream.write("\n")


def _fmt_time(seconds: float) -> str:
    if seconds == float("inf"):
        return "?"
    if seconds < 60:
        return f"{seconds:.0f} s"
    if seconds < 3600:
        return f"{seconds / 60:.1f} min"
    return f"{seconds / 3600:.1f} h"

"""Interrupt a running job, then resume it: finished batches are not recomputed.

    python workflows/resume_after_interruption.py tests/data/p2p-Gnutella08.txt g08.zarr

Starts ``mgapsp run`` as a child process, interrupts it (SIGINT, as Ctrl-C would)
once part of the batches are recorded, resumes with ``--resume``, and verifies every
row.  Prints how many batches the first run finished and the second one computed.
"""

from __future__ import annotations

import argparse
import signal
import subprocess
import sys
import time

from mgapsp.store import Store
from mgapsp.store.verify import verify_store


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("graph")
    parser.add_argument("out")
    parser.add_argument("--backend", default="auto", choices=["auto", "gpu", "cpu"])
    parser.add_argument("--batch-size", default="16")
    parser.add_argument("--stop-after", type=float, default=0.3,
                        help="fraction of batches after which to interrupt")
    args = parser.parse_args(argv)

    cmd = [sys.executable, "-m", "mgapsp.cli", "run", args.graph, "-o", args.out,
           "--backend", args.backend, "--batch-size", args.batch_size, "-q",
           "--no-dashboard"]
    first = subprocess.Popen(cmd + ["--overwrite"], stdout=subprocess.DEVNULL,
                             stderr=subprocess.PIPE, text=True)
    done = total = 0
    while first.poll() is None:
        time.sleep(0.1)
        if Store.exists(args.out):
            try:
                mask = Store.open(args.out).done_mask()
            except Exception:  # the store is being created
                continue
            done, total = int(mask.sum()), len(mask)
            if done >= args.stop_after * total:
                first.send_signal(signal.SIGINT)
                break
    err = first.communicate(timeout=120)[1]
    print(f"first run: interrupted with {done}/{total} batches done "
          f"({err.strip().splitlines()[-1] if err.strip() else 'no message'})")
    kept = int(Store.open(args.out).done_mask().sum())
    second = subprocess.run(cmd + ["--resume"], capture_output=True, text=True)
    if second.returncode != 0:
        print(second.stderr, file=sys.stderr)
        return second.returncode
    print(f"second run: {second.stdout.strip().splitlines()[1].strip()}")
    check = verify_store(args.out, all_rows=True)
    print(f"resumed after {kept} recorded batches; verified {check.rows_checked} rows: "
          f"{'ok' if check.ok else 'MISMATCH'}")
    return 0 if check.ok else 1


if __name__ == "__main__":
    sys.exit(main())

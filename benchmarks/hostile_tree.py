"""Time to lint one directory holding every input of the hostile-input catalogue (issue 12).

Usage:
    python benchmarks/hostile_tree.py [--repeat 3]

Builds the tree of ``tests/hostile.py`` (deep nesting in every format, a 100,000-term Python
expression, 10,000 nested parentheses, 100,000 assignments, 10,000-digit numbers, billion
laughs, a FIFO, a device, links, a file over the size limit, …) in a temporary directory and
runs ``shapelint`` on it as a user would (a fresh process, interpreter start-up included).
Each run is ``--no-cache`` (a cached run would time nothing but the cache) and ``--format
json``. Prints the best wall time and CPU time of ``--repeat`` runs (CPU time does not depend
on how busy the machine is), the peak resident memory of any run, the exit code, whether any
output held a traceback, how many of the catalogue's good configs were still reported (their
SL101), and the load average. Issue 12's target: under 10 s on a 2-core machine, exit 1, no
traceback.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))

from hostile import build  # noqa: E402


def main() -> None:
    """Build the tree, lint it ``--repeat`` times, print the best time."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3, help="runs (the best is kept)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "tree"
        expect = build(root, Path(tmp))
        times, cpu = [], []
        for _ in range(args.repeat):
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            start = time.perf_counter()
            proc = subprocess.run(
                [sys.executable, "-m", "shapelint", ".", "--no-cache", "--format", "json"],
                cwd=root,
                capture_output=True,
                text=True,
                env={**os.environ, "PYTHONPATH": str(REPO)},
            )
            times.append(time.perf_counter() - start)
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpu.append(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime)
            traceback = "Traceback" in proc.stdout + proc.stderr
        # ru_maxrss of the children is the largest of any child so far (KiB on Linux).
        peak_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
        good = [os.path.normpath(p) for p, outcome in expect.items() if outcome == "good"]
        try:
            found = {
                (os.path.normpath(f["path"]), f["code"])
                for f in json.loads(proc.stdout)["findings"]
            }
        except (ValueError, KeyError):
            found = set()
        linted = sum((p, "SL101") in found for p in good)
        print(f"{len(expect)} catalogue entries in {root}")
        walls = ", ".join(f"{t:.2f}" for t in times)
        print(
            f"shapelint . : best {min(times):.2f} s wall of {args.repeat} (all: {walls}); "
            f"CPU (user+sys) best {min(cpu):.2f} s; exit {proc.returncode}; "
            f"traceback: {'yes' if traceback else 'no'}; peak RSS {peak_mb:.0f} MB; "
            f"good configs reported {linted} of {len(good)}; "
            f"load average {os.getloadavg()[0]:.1f}"
        )


if __name__ == "__main__":
    main()

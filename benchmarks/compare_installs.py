"""Two shapelint installs on the same trees: configs read, SL009 notices, reading errors.

Usage::

    python benchmarks/compare_installs.py --before OLD/bin/shapelint --after NEW/bin/shapelint DIR…

For each DIR, runs ``shapelint check DIR --no-cache --exit-zero --format json`` with both
executables and prints one Markdown row: configs found, SL009 notices, error-class reading
findings (SL000, SL002–SL005: a value read wrong shows up here first), and all findings. Used
to see what a change to the readers does on repositories no test has seen.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from collections import Counter

READING_ERRORS = frozenset({"SL000", "SL002", "SL003", "SL004", "SL005"})


def counts(exe: str, tree: str) -> tuple[int, int, int, int]:
    """(configs, SL009, reading errors, findings) of one run."""
    proc = subprocess.run(
        [exe, "check", tree, "--no-cache", "--exit-zero", "--format", "json"],
        capture_output=True,
        text=True,
        check=False,
    )
    data = json.loads(proc.stdout)
    codes = Counter(f["code"] for f in data["findings"])
    errors = sum(n for code, n in codes.items() if code in READING_ERRORS)
    return len(data["configs"]), codes.get("SL009", 0), errors, sum(codes.values())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--before", required=True, help="the old install's shapelint")
    parser.add_argument("--after", required=True, help="the new install's shapelint")
    parser.add_argument("trees", nargs="+", metavar="DIR")
    args = parser.parse_args(argv)
    print("| source | configs | SL009 | SL000/2–5 | all findings |")
    print("|---|---|---|---|---|")
    for tree in args.trees:
        b, a = counts(args.before, tree), counts(args.after, tree)
        cells = " | ".join(f"{x} → {y}" for x, y in zip(b, a, strict=True))
        print(f"| {tree} | {cells} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())

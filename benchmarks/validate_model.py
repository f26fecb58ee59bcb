"""Compare measured GEMM times (a gemm_sweep.py CSV) with shapelint's predictions.

Usage:
    python benchmarks/validate_model.py sweep.csv --gpu h100 [--gpu-file my_gpus.yaml]

Prints one line per row (measured, predicted, relative error in time) and then the median
and worst relative error |predicted / measured − 1|, overall and per dtype. Rows of kind
"sdpa" are compared with the model's flash-attention forward at the padded head dim.

gpu_validate.py's CSVs (gemm.csv, lmhead.csv, residues.csv) carry more columns, which are
read when present: ``layout`` (NT, NN, TN: which dim each operand is contiguous along, so
which leading dimensions the model checks), ``op`` and ``mis_dim`` (printed). A row without a
layout (or ``-``) is taken as NT (``X·Wᵀ``). Rows that are not one GEMM (``linear-fwdbwd``,
summary rows of kind ``none``) are skipped.
"""

from __future__ import annotations

import argparse
import csv
import statistics
import sys
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from shapelint.engine.gpu_file import lookup
from shapelint.perf.estimate import op_time
from shapelint.perf.gemm import AContig, BContig
from shapelint.perf.workload import Gemm, flash_head_dim

# Each layout's (a_contig, b_contig), as gpu_validate.py builds its operands: NT = A[m,k]·B[n,k]ᵀ,
# NN = A[m,k]·B[k,n], TN = A[k,m]ᵀ·B[k,n].
LAYOUTS: dict[str, tuple[AContig, BContig]] = {
    "NT": ("k", "k"),
    "NN": ("k", "n"),
    "TN": ("m", "n"),
}


@dataclass(frozen=True)
class Comparison:
    """One measured row against the model."""

    kind: str
    b: int
    m: int
    n: int
    k: int
    measured_s: float
    predicted_s: float
    dtype: str = "bf16"
    layout: str = "NT"
    label: str = ""

    @property
    def error(self) -> float:
        """Relative error in time, |predicted / measured - 1|."""
        return abs(self.predicted_s / self.measured_s - 1)


def compare(path: str | Path, gpu_name: str, gpu_file: str | None = None) -> list[Comparison]:
    """Read a sweep CSV and predict every row on ``gpu_name``."""
    gpu = lookup(gpu_name, gpu_file)
    out = []
    with open(path, encoding="utf-8", newline="") as f:
        for row in csv.DictReader(f):
            kind = row["kind"]
            b, m, n, k = (int(row[c]) for c in ("b", "m", "n", "k"))
            dtype = row.get("dtype") or "bf16"
            if kind == "sdpa":
                gemm = Gemm(
                    "attention",
                    "fwd",
                    m,
                    n,
                    flash_head_dim(k),
                    b,
                    dtype=dtype,
                    kind="flash",
                    head_dim=k,
                )
            elif kind == "gemm":
                layout = row.get("layout") or "NT"
                a_contig, b_contig = LAYOUTS.get(layout, LAYOUTS["NT"])
                gemm = Gemm(
                    "gemm", "fwd", m, n, k, b, dtype=dtype, a_contig=a_contig, b_contig=b_contig
                )
            else:
                continue
            label = " ".join(row.get(c, "") or "" for c in ("op", "mis_dim", "align")).strip()
            out.append(
                Comparison(
                    kind,
                    b,
                    m,
                    n,
                    k,
                    float(row["time_s"]),
                    op_time(gemm, gpu).time_s,
                    dtype,
                    row.get("layout") or "NT",
                    label,
                )
            )
    return out


def summary(rows: list[Comparison]) -> tuple[float, float]:
    """Median and worst relative error in time."""
    errors = [r.error for r in rows]
    return statistics.median(errors), max(errors)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("csv")
    parser.add_argument("--gpu", required=True, help="GPU name or alias (e.g. h100)")
    parser.add_argument("--gpu-file", help="extra GPU table (YAML) merged over the built-in one")
    args = parser.parse_args(argv)
    rows = compare(args.csv, args.gpu, args.gpu_file)
    if not rows:
        print("no comparable rows", file=sys.stderr)
        return 1
    print(
        f"{'kind':5} {'dtype':5} {'lay':3} {'b':>5} {'m':>6} {'n':>6} {'k':>6} "
        f"{'measured':>11} {'model':>11} {'error':>6}  row"
    )
    for r in rows:
        print(
            f"{r.kind:5} {r.dtype:5} {r.layout:3} {r.b:5d} {r.m:6d} {r.n:6d} {r.k:6d} "
            f"{r.measured_s * 1e6:9.2f}us {r.predicted_s * 1e6:9.2f}us {r.error:6.1%}  {r.label}"
        )
    for dtype in sorted({r.dtype for r in rows}):
        some = [r for r in rows if r.dtype == dtype]
        median, worst = summary(some)
        print(f"{dtype}: {len(some)} rows: median relative error {median:.1%}, worst {worst:.1%}")
    median, worst = summary(rows)
    print(f"{len(rows)} rows: median relative error {median:.1%}, worst {worst:.1%} (in time)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Fit Hopper's alignment constants on the fit rows of our H200 GEMM measurements.

Usage:
    python benchmarks/fit_alignment.py            # print the fitted constants and the errors

What it fits (the GPU table's ``hopper`` family, ``align_factor`` and ``kernel_cliffs``):

- for each misaligned fit row, the factor alignment must cost it: the measured slowdown
  against its aligned reference, with what the model's tiles and waves already explain
  divided out (the model run with no alignment cost at all);
- a **cliff** per row of `CLIFF_ROWS` (an alignment, a regime — ``tiled`` M > 64 or
  ``skinny`` M ≤ 64 — and the operands whose leading dimension fires it; the first row that
  fires claims the GEMM, as in the GPU table): the median factor of the rows it claims;
- the **curve** (bytes → factor) from the other rows whose only misaligned dim is one GEMM
  dim: the median factor per alignment class (16 B, 32 B, …), all Tensor Core dtypes
  together (the factor is per byte, as cuBLAS's and TMA's alignment rules are).

Rows: benchmarks/results/nvidia-h200/gemm.csv (and round2/residues.csv when present), with
the split of their SPLIT.md files (`h200_rows`). Held-out rows are only reported.
"""

from __future__ import annotations

import dataclasses
import statistics
import sys
from collections import defaultdict
from pathlib import Path
from types import MappingProxyType

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import h200_rows

from shapelint.hardware.gpus import GPU, lookup
from shapelint.perf.gemm import CALIBRATION, gemm_time, leading_dims

# Hopper's cliff rows as the GPU table lists them (the first that fires applies):
# (ld_align_bytes, regime, operands). Our H200 residue sweep: an odd size of a 2-byte dtype
# (2 B) is the slowest, slower still when only the output C is odd; any leading dimension below
# 16 B (4 and 8 B: 2- and 4-element bf16 sizes, odd and 2-element tf32 sizes) a step milder.
CLIFF_ROWS = (
    (2, "tiled", ("A", "B")),
    (2, "tiled", ("C",)),
    (8, "tiled", ("A", "B", "C")),
    (2, "skinny", ("A", "B", "C")),
    (8, "skinny", ("A", "B", "C")),
)
TENSOR_CORE = ("bf16", "fp16", "tf32", "fp8")


def flat(gpu: GPU) -> GPU:
    """``gpu`` with no alignment cost: no curve, no cliffs."""
    return dataclasses.replace(gpu, align_factor=MappingProxyType({}), kernel_cliffs=())


def model_s(row: h200_rows.GemmRow, gpu: GPU) -> float:
    """The model's time for ``row`` on ``gpu``."""
    a, b = row.contig
    return gemm_time(
        row.m,
        row.n,
        row.k,
        gpu=gpu,
        dtype=row.dtype,
        a_contig=a,  # type: ignore[arg-type]
        b_contig=b,  # type: ignore[arg-type]
    ).time_s


def needed_factor(row: h200_rows.GemmRow, ref: h200_rows.GemmRow, gpu: GPU) -> float:
    """The alignment factor that makes the model's slowdown of ``row`` over ``ref`` equal the
    measured one (tiles and waves explained by the model divided out)."""
    base = flat(gpu)
    modelled = model_s(row, base) / model_s(ref, base)
    measured = row.time_s / ref.time_s
    return modelled / measured


def classify(row: h200_rows.GemmRow, gpu: GPU) -> tuple[str, int]:
    """(kind, key): ``cliff`` with the index of the first `CLIFF_ROWS` row that fires, or
    ``curve`` with the alignment in bytes when exactly one GEMM dim is misaligned (the
    output's N from 16 B up not counted), else ``mixed``."""
    a, b = row.contig
    lds = [
        d
        for d in leading_dims(row.m, row.n, row.k, row.dtype, a, b)  # type: ignore[arg-type]
        if d.align_bytes < gpu.best_align_bytes
    ]
    regime = "skinny" if row.m <= CALIBRATION.skinny_max_m else "tiled"
    for i, (nbytes, where, operands) in enumerate(CLIFF_ROWS):
        if where == regime and any(d.operand in operands and d.align_bytes <= nbytes for d in lds):
            return "cliff", i
    counted = [
        d
        for d in lds
        if not (d.operand == "C" and d.align_bytes >= CALIBRATION.output_free_align_bytes)
    ]
    if len({d.dim for d in counted}) == 1:
        return "curve", min(d.align_bytes for d in counted)
    return "mixed", 0


def files() -> list[list[h200_rows.GemmRow]]:
    """The H200 GEMM rows with references, per file: gemm.csv, lmhead.csv and round 2's
    residues.csv when present (row indices are per file)."""
    out = [h200_rows.gemm_rows(), h200_rows.lmhead_rows()]
    if (h200_rows.ROUND2 / "residues.csv").exists():
        out.append(h200_rows.residue_rows())
    return out


def factors(split: str = "fit") -> tuple[dict[int, list[float]], dict[int, list[float]]]:
    """(cliff factors by `CLIFF_ROWS` index, curve factors by bytes): what each Tensor Core
    row of ``split`` needs."""
    gpu = lookup("h200")
    cliffs: dict[int, list[float]] = defaultdict(list)
    curve: dict[int, list[float]] = defaultdict(list)
    for file_rows in files():
        refs = {r.index: r for r in file_rows}
        for r in file_rows:
            if r.split != split or r.ref is None or r.ref not in refs:
                continue
            if r.dtype not in TENSOR_CORE:
                continue  # fp32 (no Tensor Cores) has no alignment cost to fit
            kind, key = classify(r, gpu)
            factor = needed_factor(r, refs[r.ref], gpu)
            if kind == "cliff":
                cliffs[key].append(factor)
            elif kind == "curve":
                curve[key].append(factor)
    return dict(cliffs), dict(curve)


def main() -> int:
    for split in ("fit", "held_out"):
        cliffs, curve = factors(split)
        print(f"{split} rows: the factor each needs; median [rows, min, max]")
        print("  cliffs: leading dimension of these operands at most N bytes aligned, regime")
        for i, values in sorted(cliffs.items()):
            nbytes, regime, operands = CLIFF_ROWS[i]
            print(f"    {','.join(operands):5} <= {nbytes} B {regime:6} {_stats(values)}")
        print("  curve: one misaligned GEMM dim, its alignment")
        for nbytes, values in sorted(curve.items()):
            print(f"    {nbytes:3d} B              {_stats(values)}")
    return 0


def _stats(values: list[float]) -> str:
    return f"{statistics.median(values):.3f}  [{len(values)}, {min(values):.3f}, {max(values):.3f}]"


if __name__ == "__main__":
    sys.exit(main())

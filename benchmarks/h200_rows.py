"""Read our own H200 measurements (benchmarks/results/nvidia-h200/) with their fit/held-out split.

The split rules are those of ``benchmarks/results/nvidia-h200/SPLIT.md`` (written before any
model prediction was computed for the rows) and, for the second round's files, of
``round2/SPLIT.md``; this module applies them by position and shape columns only, so any
script or test that fits or reports on these rows uses the same sets.
"""

from __future__ import annotations

import csv
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results" / "nvidia-h200"
ROUND2 = RESULTS / "round2"

# Each layout's operands: which GEMM dim each one's rows are contiguous along (a_contig,
# b_contig), as gpu_validate.py builds them: NT = A[m,k]·B[n,k]ᵀ, NN = A[m,k]·B[k,n],
# TN = A[k,m]ᵀ·B[k,n].
LAYOUTS: dict[str, tuple[str, str]] = {"NT": ("k", "k"), "NN": ("k", "n"), "TN": ("m", "n")}


@dataclass(frozen=True)
class GemmRow:
    """One timed GEMM row of gemm.csv, lmhead.csv or residues.csv."""

    index: int  # position among the file's data rows (0-based, every status counted)
    m: int
    n: int
    k: int
    dtype: str
    layout: str
    op: str
    mis_dim: str
    align: str
    time_s: float
    split: str  # "fit" or "held_out"
    ref: int | None  # index of the aligned reference row it is compared with (None: a reference)

    @property
    def contig(self) -> tuple[str, str]:
        """(a_contig, b_contig) of the row's layout."""
        return LAYOUTS[self.layout]


def _rows(path: Path) -> list[dict[str, str]]:
    with path.open(encoding="utf-8", newline="") as f:
        return list(csv.DictReader(f))


def _gemm(index: int, row: dict[str, str], split: str, ref: int | None) -> GemmRow:
    return GemmRow(
        index=index,
        m=int(row["m"]),
        n=int(row["n"]),
        k=int(row["k"]),
        dtype=row["dtype"],
        layout=row["layout"],
        op=row["op"],
        mis_dim=row["mis_dim"],
        align=row["align"],
        time_s=float(row["time_s"]),
        split=split,
        ref=ref,
    )


def gemm_rows(path: Path = RESULTS / "gemm.csv") -> list[GemmRow]:
    """gemm.csv's ``ok`` rows. SPLIT.md: 26 blocks of 10 rows (reference, then nine misaligned
    rows); every reference is fit; misaligned row t of block b is held out when t + b is odd."""
    raw = _rows(path)
    out: list[GemmRow] = []
    for i, row in enumerate(raw):
        if row["status"] != "ok":
            continue
        block, t = divmod(i, 10)
        if t == 0:
            out.append(_gemm(i, row, "fit", None))
        else:
            split = "held_out" if (t - 1 + block) % 2 else "fit"
            out.append(_gemm(i, row, split, block * 10))
    return out


def lmhead_rows(path: Path = RESULTS / "lmhead.csv") -> list[GemmRow]:
    """lmhead.csv's single-GEMM rows (fwd, dgrad, wgrad; the fwd+bwd rows are not one GEMM).
    SPLIT.md: aligned vocabularies fit; vocab 50257 at hidden 4096 and 128003 at hidden 2048
    held out, the other odd ones fit. Each odd row's reference is the same op at the aligned
    vocab of the same hidden size (128000 for 128003, 50304 for 50257)."""
    raw = _rows(path)
    refs: dict[tuple[int, int, str], int] = {}
    for i, row in enumerate(raw):
        if row["align"] != "odd" and row["op"] in ("fwd", "dgrad", "wgrad"):
            refs[(int(row["k"] if row["op"] == "fwd" else row["n"]), _vocab(row), row["op"])] = i
    out: list[GemmRow] = []
    for i, row in enumerate(raw):
        if row["status"] != "ok" or row["op"] not in ("fwd", "dgrad", "wgrad"):
            continue
        hidden = int(row["k"] if row["op"] == "fwd" else row["n"])
        vocab = _vocab(row)
        if row["align"] != "odd":
            out.append(_gemm(i, row, "fit", None))
            continue
        held = (vocab, hidden) in ((50257, 4096), (128003, 2048))
        aligned = {128003: 128000, 50257: 50304}[vocab]
        out.append(
            _gemm(i, row, "held_out" if held else "fit", refs.get((hidden, aligned, row["op"])))
        )
    return out


def _vocab(row: dict[str, str]) -> int:
    return int({"fwd": row["n"], "dgrad": row["k"], "wgrad": row["m"]}[row["op"]])


def attention_split(head_dim: int) -> str:
    """attention.csv (and round 2's unfused.csv): head dims 64, 96, 128, 140, 192 fit; 80, 112,
    132, 160, 256 held out."""
    return "fit" if head_dim in (64, 96, 128, 140, 192) else "held_out"


@dataclass(frozen=True)
class ModelRow:
    """One row of train.csv or decode.csv."""

    variant: str
    ref: str
    hidden: int
    layers: int
    heads: int
    kv_heads: int
    head_dim: int
    ffn: int
    vocab: int
    batch: int
    seq: int
    mode: str
    time_s: float  # step_s (train) or seconds per token (decode)
    split: str


def train_rows(path: Path = RESULTS / "train.csv") -> list[ModelRow]:
    """train.csv: base, vocab50257, h2560-20x128, h2560-32x80 fit; the FFN group held out."""
    out = []
    for row in _rows(path):
        if row["status"] != "ok":
            continue
        held = row["variant"] in ("ffn5504", "ffn5461", "ffn5464")
        out.append(
            ModelRow(
                row["variant"],
                row["ref"],
                int(row["hidden"]),
                int(row["layers"]),
                int(row["heads"]),
                int(row.get("kv_heads") or row["heads"]),
                int(row["head_dim"]),
                int(row["ffn"]),
                int(row["vocab"]),
                int(row["batch"]),
                int(row["seq"]),
                "train",
                float(row["step_s"]),
                "held_out" if held else "fit",
            )
        )
    return out


def decode_rows(path: Path = RESULTS / "decode.csv", mode: str = "graph") -> list[ModelRow]:
    """decode.csv (or round 2's decode_large.csv) rows of one mode. SPLIT.md: base, ffn5504,
    h2560-20x128 fit, the others held out; round2/SPLIT.md: llama3-8b fit, llama2-7b and the
    odd vocab held out."""
    fit = ("base", "ffn5504", "h2560-20x128", "llama3-8b")
    out = []
    for row in _rows(path):
        if row["status"] != "ok" or row["mode"] != mode:
            continue
        prompt, gen = int(row["prompt"]), int(row["gen"])
        out.append(
            ModelRow(
                row["variant"],
                row["ref"],
                int(row["hidden"]),
                int(row["layers"]),
                int(row["heads"]),
                int(row.get("kv_heads") or row["heads"]),
                int(row["head_dim"]),
                int(row["ffn"]),
                int(row["vocab"]),
                1,
                # the cache length a generated token attends over, on average
                prompt + gen // 2,
                mode,
                float(row["ms_per_token"]) / 1e3,
                "fit" if row["variant"] in fit else "held_out",
            )
        )
    return out


def residue_rows(path: Path = ROUND2 / "residues.csv") -> list[GemmRow]:
    """round2/residues.csv's ``ok`` rows (split: round2/SPLIT.md). The rows form groups — the
    sweeps by (dtype, layout, m, moved dim), the FFN GEMMs by op — whose first aligned row
    (align x64) is fit and is the group's reference. In a group where some alignment class
    occurs more than once (the residue sweeps at M 8192), the other rows of each class
    alternate fit, held out, fit, … in file order; in the other groups (the FFN GEMMs, tf32,
    M 16) the other rows alternate so, whatever their class."""
    raw = [(i, row) for i, row in enumerate(_rows(path)) if row["status"] == "ok"]
    groups: dict[tuple[str, ...], list[tuple[int, dict[str, str]]]] = {}
    for i, row in raw:
        groups.setdefault(_residue_group(row), []).append((i, row))
    split_of: dict[int, tuple[str, int | None]] = {}
    for members in groups.values():
        ref = next((i for i, row in members if row["align"] == "x64"), None)
        rest = [(i, row) for i, row in members if i != ref]
        classes = [row["align"] for _, row in rest]
        by_class = len(set(classes)) < len(classes)
        counts: dict[str, int] = {}
        for i, row in rest:
            key = row["align"] if by_class else ""
            count = counts.get(key, 0)
            counts[key] = count + 1
            split_of[i] = ("held_out" if count % 2 else "fit", ref)
        if ref is not None:
            split_of[ref] = ("fit", None)
    return [_gemm(i, row, *split_of[i]) for i, row in raw]


def _residue_group(row: dict[str, str]) -> tuple[str, ...]:
    if row["op"] != "sweep":
        # FFN GEMMs: one group per op; the reference is its width-5504 row
        return ("ffn", row["op"])
    return (row["dtype"], row["layout"], row["m"], row["mis_dim"])


def iter_ok(rows: list[GemmRow], split: str | None = None) -> Iterator[GemmRow]:
    """The rows of ``split`` (all when None)."""
    return (r for r in rows if split is None or r.split == split)

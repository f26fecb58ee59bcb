"""Whole-step model against published training throughput (llm-foundry's MPT tables).

Usage:
    python benchmarks/step_calibration.py            # every row: published vs predicted MFU
    python benchmarks/step_calibration.py --fit      # refit the whole-step constants
    python benchmarks/step_calibration.py --markdown # the table of docs/calibration.md
    python benchmarks/step_calibration.py --attention # FlashAttention figures: model vs published

Data: tests/perf/data/llm_foundry_mpt.csv (every 8-GPU bf16 row of the H100 80GB, A100 80GB
and A100 40GB tables of mosaicml/llm-foundry scripts/train/benchmarking/README.md, with a
fixed fit/held-out split) and tests/perf/data/mpt_shapes.csv (the MPT yamls' shapes).

Each row is modelled as one GPU of the published run: micro-batch b and sequence s as
published, the attention kernel the runs used (llm-foundry's Triton flash-attention: the
submit_benchmarks.py of the tables' commits defaults ``--attn_impl`` to ``triton``; its rates
are the FlashAttention-2 paper's "FlashAttention Triton" bars on A100, FlashAttention-1's bars
standing in on H100, see shapelint/perf/attention.py), plain PyTorch kernels (FUSED below),
learned position embeddings, FSDP over the 8 GPUs (optimizer state sharded, gradients
reduce-scattered over NVLink behind the backward), the row's gradient accumulation and its
activation checkpointing. The predicted MFU uses the table's own formula:
tokens/s/GPU × (6·NumParams + 12·n_layers·d_model·s) / dense peak.

Fitted on the fit rows (``--fit``): the GEMMs' sustained fraction per GPU family, the Triton
kernel's scale against its figure per family (both in the GPU table,
shapelint/hardware/gpus.yaml, ``families``), and the cost of activation checkpointing
(shapelint/perf/estimate.py).
"""

from __future__ import annotations

import argparse
import csv
import dataclasses
import math
import statistics
import sys
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from shapelint.core.model import Dim, ModelConfig, Target, Value
from shapelint.core.source import Span
from shapelint.core.target import Attention
from shapelint.hardware.gpus import GPU, lookup
from shapelint.perf.estimate import STEP_CALIBRATION, StepCalibration, step_time

DATA = Path(__file__).resolve().parent.parent / "tests" / "perf" / "data"
ROWS_CSV = DATA / "llm_foundry_mpt.csv"
SHAPES_CSV = DATA / "mpt_shapes.csv"
GPUS = {"h100_80gb": "h100", "a100_80gb": "a100-80gb", "a100_40gb": "a100-40gb"}
# Fusions of the MPT benchmark runs: torch LayerNorm and GELU are single kernels anyway
# (counted as "norm"); no SwiGLU or rotary; Composer's default optimizer for these yamls is
# decoupled LionW/AdamW run per tensor (foreach), counted unfused; eager cross-entropy.
FUSED = "none,norm"
# The attention kernel of the runs: llm-foundry's Triton flash-attention (submit_benchmarks.py
# at the tables' commits, b2a43a1 and 5f43bf1, defaults --attn_impl to triton).
KERNEL: Attention = "triton"
_NOWHERE = Span("", 1, 1, 1, 1, 0, 0)


@dataclass(frozen=True)
class Row:
    """One published row."""

    table: str
    model: str
    seq_len: int
    gpus: int
    gpu: str
    mfu: float  # fraction
    micro_batch: int
    grad_accum: int
    tokens_per_s_per_gpu: float
    checkpointing: bool
    num_params: int
    split: str


@dataclass(frozen=True)
class Prediction:
    """The model's MFU for one row (by the table's own formula) and its relative error."""

    row: Row
    step_s: float
    mfu: float
    model_mfu: float

    @property
    def error(self) -> float:
        """predicted / published − 1."""
        return self.mfu / self.row.mfu - 1.0


def _data_lines(path: Path) -> Iterator[str]:
    with path.open(encoding="utf-8") as f:
        for line in f:
            if not line.startswith("#"):
                yield line


def load_rows(path: Path = ROWS_CSV) -> list[Row]:
    """The published rows, in file order."""
    return [
        Row(
            table=r["table"],
            model=r["model"],
            seq_len=int(r["seq_len"]),
            gpus=int(r["gpus"]),
            gpu=r["gpu"],
            mfu=float(r["mfu_pct"]) / 100.0,
            micro_batch=int(r["micro_batch"]),
            grad_accum=int(r["grad_accum"]),
            tokens_per_s_per_gpu=float(r["tokens_per_s_per_gpu"]),
            checkpointing=r["activation_checkpointing"] == "True",
            num_params=int(r["num_params"]),
            split=r["split"],
        )
        for r in csv.DictReader(_data_lines(path))
    ]


def load_shapes(path: Path = SHAPES_CSV) -> dict[str, dict[str, int]]:
    """MPT shapes by model name."""
    return {
        r["model"]: {k: int(v) for k, v in r.items() if k != "model"}
        for r in csv.DictReader(_data_lines(path))
    }


def mpt_config(shape: dict[str, int], row: Row) -> ModelConfig:
    """The MPT model of ``row`` as a ModelConfig."""
    dims = {
        Dim.HIDDEN: shape["d_model"],
        Dim.HEADS: shape["n_heads"],
        Dim.LAYERS: shape["n_layers"],
        Dim.FFN: shape["expansion_ratio"] * shape["d_model"],
        Dim.VOCAB: shape["vocab_size"],
        Dim.GRAD_ACCUM: row.grad_accum,
    }
    return ModelConfig(
        name=f"mpt-{row.model}",
        path="",
        dialect="mpt",
        dims=MappingProxyType({d: Value(v, d.value, _NOWHERE) for d, v in dims.items()}),
        gated_mlp=False,
        position_embedding="learned",
    )


def target_of(row: Row, gpu: GPU) -> Target:
    """One GPU of the published run."""
    return Target(
        gpu=gpu,
        dtype="bf16",
        micro_batch=row.micro_batch,
        seq_len=row.seq_len,
        tp=1,
        mode="train",
        attention=KERNEL,
        fused=FUSED,
        data_parallel=row.gpus,
        sharded=True,
        recompute=row.checkpointing,
    )


@dataclass(frozen=True)
class Fitted:
    """The whole-step constants the fit sets: per GPU family, the GEMMs' sustained fraction
    and the Triton kernel's scale (the GPU table's ``step_sustained_fraction`` and
    ``attention_scale``), and the cost of activation checkpointing (perf/estimate.py)."""

    sustained: Mapping[str, float]
    attention: Mapping[str, float]
    recompute_cost: float


def shipped() -> Fitted:
    """The constants shapelint ships, for the families of the published rows."""
    gpus = {lookup(name).arch: lookup(name) for name in GPUS.values()}
    return Fitted(
        sustained=MappingProxyType({a: g.step_sustained_fraction for a, g in gpus.items()}),
        attention=MappingProxyType(
            {a: g.attention_scale.get(KERNEL, 1.0) for a, g in gpus.items()}
        ),
        recompute_cost=STEP_CALIBRATION.recompute_cost,
    )


# The GPUs with fitted constants, one object per value set: the step model caches GEMM times by
# GPU object, and a fit asks for the same values many times.
_FITTED_GPUS: dict[tuple[str, float, float], GPU] = {}


def fitted_gpu(name: str, fitted: Fitted) -> GPU:
    """GPU ``name`` with ``fitted``'s constants for its family (the table's where it has none)."""
    gpu = lookup(name)
    sustained = fitted.sustained.get(gpu.arch, gpu.step_sustained_fraction)
    # A family whose scale is not fitted yet takes Ampere's, else 1.0: the shipped constants
    # were fitted so (Hopper's sustained fraction is first fitted with Ampere's Triton scale).
    scale = fitted.attention.get(gpu.arch, fitted.attention.get("ampere", 1.0))
    key = (gpu.name, sustained, scale)
    if key not in _FITTED_GPUS:
        _FITTED_GPUS[key] = dataclasses.replace(
            gpu,
            step_sustained_fraction=sustained,
            attention_scale=MappingProxyType({**gpu.attention_scale, KERNEL: scale}),
        )
    return _FITTED_GPUS[key]


def predict(rows: list[Row], fitted: Fitted | None = None) -> list[Prediction]:
    """The model's prediction for each row (with ``fitted``'s constants; default: shipped)."""
    shapes = load_shapes()
    out = []
    for row in rows:
        gpu = lookup(GPUS[row.gpu]) if fitted is None else fitted_gpu(GPUS[row.gpu], fitted)
        calibration = STEP_CALIBRATION
        if fitted is not None:
            calibration = StepCalibration(recompute_cost=fitted.recompute_cost)
        shape = shapes[row.model]
        step = step_time(mpt_config(shape, row), target_of(row, gpu), calibration)
        tokens_per_s = row.micro_batch * row.seq_len / step.total_s
        per_token = 6.0 * row.num_params + 12.0 * shape["n_layers"] * shape["d_model"] * row.seq_len
        mfu = tokens_per_s * per_token / (gpu.peak("bf16") * 1e12)
        out.append(Prediction(row, step.total_s, mfu, step.mfu))
    return out


def arch_of(row: Row) -> str:
    """The GPU family of a row."""
    return lookup(GPUS[row.gpu]).arch


def _golden(loss: Callable[[float], float], lo: float, hi: float) -> float:
    g = (math.sqrt(5) - 1) / 2
    for _ in range(25):
        a, b = hi - g * (hi - lo), lo + g * (hi - lo)
        if loss(a) < loss(b):
            hi = b
        else:
            lo = a
    return round((lo + hi) / 2, 3)


def fit(rows: list[Row]) -> Fitted:
    """Fit the sustained fraction and the Triton kernel's scale per family, and the recompute
    cost, on ``rows`` (the fit rows): coordinate descent, each constant by golden-section
    search, minimizing the median |log(predicted / published MFU)| (per family for
    ``sustained`` and ``attention``, over the checkpointed rows given for
    ``recompute_cost``)."""
    archs = sorted({arch_of(r) for r in rows})
    # A fixed start, so the fit does not depend on the constants it replaces.
    fitted = Fitted(
        sustained=MappingProxyType(dict.fromkeys(archs, 1.0)),
        attention=MappingProxyType({}),
        recompute_cost=1.0,
    )

    def loss(f: Fitted, some: list[Row]) -> float:
        return statistics.median(abs(math.log(p.mfu / p.row.mfu)) for p in predict(some, f))

    for _ in range(3):
        for arch in archs:
            mine = [r for r in rows if arch_of(r) == arch]
            base = fitted

            def by_sustained(
                x: float, arch: str = arch, base: Fitted = base, mine: list[Row] = mine
            ) -> float:
                sustained = MappingProxyType({**base.sustained, arch: x})
                return loss(dataclasses.replace(base, sustained=sustained), mine)

            best = _golden(by_sustained, 0.3, 1.0)
            fitted = dataclasses.replace(
                fitted, sustained=MappingProxyType({**fitted.sustained, arch: best})
            )
            base = fitted

            def by_attention(
                x: float, arch: str = arch, base: Fitted = base, mine: list[Row] = mine
            ) -> float:
                attention = MappingProxyType({**base.attention, arch: x})
                return loss(dataclasses.replace(base, attention=attention), mine)

            best = _golden(by_attention, 0.3, 1.5)
            fitted = dataclasses.replace(
                fitted, attention=MappingProxyType({**fitted.attention, arch: best})
            )
        checkpointed = [r for r in rows if r.checkpointing]
        base = fitted

        def by_recompute(x: float, base: Fitted = base, some: list[Row] = checkpointed) -> float:
            return loss(dataclasses.replace(base, recompute_cost=x), some)

        fitted = dataclasses.replace(fitted, recompute_cost=_golden(by_recompute, 0.0, 1.0))
    return fitted


def summary(preds: list[Prediction]) -> tuple[float, float, float]:
    """Median and worst |error|, and the share of rows within ±20%."""
    errors = [abs(p.error) for p in preds]
    return (
        statistics.median(errors),
        max(errors),
        sum(e <= 0.20 for e in errors) / len(errors),
    )


def attention_report() -> int:
    """Print the attention model's error on the FlashAttention figures, fit and held out."""
    from shapelint.perf.attention import paper_rate

    with (DATA / "flash_attention.csv").open(encoding="utf-8") as f:
        bars = list(csv.DictReader(ln for ln in f if not ln.startswith("#")))
    for split in ("fit", "held_out"):
        errors = []
        for r in (b for b in bars if b["split"] == split):
            causal = r["causal"] == "True"
            d, s = int(r["head_dim"]), int(r["seq_len"])
            rate = paper_rate(r["gpu"], r["kernel"], r["pass"], causal, d, s)
            errors.append(abs((rate or 0.0) / float(r["tflops"]) - 1))
        print(
            f"FlashAttention {split} bars ({len(errors)}): median |error|"
            f" {statistics.median(errors):.1%}, worst {max(errors):.1%}"
        )
    return 0


def main(argv: list[str] | None = None) -> int:
    """Print published vs predicted MFU per row and the error on fit and held-out rows."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--fit", action="store_true", help="refit on the fit rows and print")
    parser.add_argument("--markdown", action="store_true", help="print a Markdown table")
    parser.add_argument(
        "--attention", action="store_true", help="the attention model against its figures"
    )
    args = parser.parse_args(argv)
    if args.attention:
        return attention_report()
    rows = load_rows()
    if args.fit:
        fitted = fit([r for r in rows if r.split == "fit"])
        print(
            f"fitted on the fit rows: step_sustained_fraction {dict(fitted.sustained)},"
            f" attention_scale of {KERNEL} {dict(fitted.attention)},"
            f" recompute_cost {fitted.recompute_cost}"
        )
        return 0
    preds = predict(rows)
    if args.markdown:
        print("| table | model | seq | b | AC | split | published MFU | predicted MFU | error |")
        print("|---|---|---|---|---|---|---|---|---|")
    for p in preds:
        r = p.row
        if args.markdown:
            print(
                f"| {r.table} | {r.model} | {r.seq_len} | {r.micro_batch} |"
                f" {'yes' if r.checkpointing else 'no'} | {r.split} | {r.mfu:.1%} |"
                f" {p.mfu:.1%} | {p.error:+.1%} |"
            )
        else:
            print(
                f"{r.table:15s} {r.model:5s} s={r.seq_len:6d} b={r.micro_batch:3d}"
                f" AC={'y' if r.checkpointing else 'n'} {r.split:8s} published {r.mfu:6.1%}"
                f" predicted {p.mfu:6.1%} ({p.error:+6.1%})"
            )
    for split in ("fit", "held_out"):
        for family in ("hopper", "ampere"):
            some = [p for p in preds if p.row.split == split and arch_of(p.row) == family]
            if some:
                median, worst, within = summary(some)
                print(
                    f"{split} rows, {family} ({len(some)}): median |error| {median:.1%},"
                    f" worst {worst:.1%}, within ±20%: {within:.0%}"
                )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

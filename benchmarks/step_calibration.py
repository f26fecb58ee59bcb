"""Whole-step model against published training throughput.

Usage:
    python benchmarks/step_calibration.py             # every row: published vs predicted, and
                                                      # the error per table on fit / held-out rows
    python benchmarks/step_calibration.py --table nemo  # one table's rows
    python benchmarks/step_calibration.py --fit       # refit the whole-step constants
    python benchmarks/step_calibration.py --markdown  # the tables of docs/calibration.md
    python benchmarks/step_calibration.py --attention # FlashAttention figures: model vs published

Data: the published runs of benchmarks/published_runs.py (tests/perf/data: llm-foundry's MPT
tables, NeMo's performance summary, torchtitan's performance tables, Megatron-LM's scaling
tables; and our H200 train-step rows), each with a fixed fit / held-out split. Each row is one
GPU of the published run, with the run's own settings (parallel sizes, micro- and global batch,
recompute, fusions, attention kernel, framework); the prediction is tokens per second per GPU,
b·s / (t·c·p · the step's time per micro-batch), compared with the published tokens/s per GPU
(or the published TFLOP/s converted with the publication's own FLOP count).

Fitted on the fit rows only (``--fit``), in this order:

1. per GPU family (the GPU table, ``families``): the GEMMs' sustained fraction and the Triton
   kernel's scale, on llm-foundry's fit rows (the reference framework, whose scale is 1);
2. per framework (`shapelint.perf.estimate.STEP_CALIBRATION`): the scale of the family's
   sustained fraction, on that framework's fit rows (megatron: NeMo and Megatron-LM; pytorch:
   torchtitan without compile and our H200 rows; compile: torchtitan with torch.compile), and
   the fraction of tensor-parallel collectives hidden behind the GEMMs when the run overlaps
   them (megatron: ``--tp-comm-overlap``; compile: async TP).

Each constant minimizes the mean |log(predicted / published)| of its rows (golden-section
search, coordinate descent from a fixed start, so the fit does not depend on the constants it
replaces).
"""

from __future__ import annotations

import argparse
import csv
import dataclasses
import math
import statistics
import sys
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from published_runs import DATA, TABLES, Run, all_runs

from shapelint.core.target import Target
from shapelint.hardware.gpus import GPU, builtin_data, lookup
from shapelint.perf.estimate import (
    STEP_CALIBRATION,
    StepCalibration,
    StepEstimate,
    step_time,
)

# The kernel of llm-foundry's runs, whose per-family scale is fitted with the family's sustained
# fraction, and the kernels of the other frameworks' runs, whose per-family scales are fitted
# with the frameworks' constants (on the families whose fit rows run them).
KERNEL = "triton"
KERNELS = ("cudnn", "sdpa")
# The families whose constants llm-foundry's rows fit, and the frameworks fitted after them.
FAMILIES = ("hopper", "ampere")
FITTED_FRAMEWORKS = ("megatron", "pytorch", "compile")
SPLITS = ("fit", "held_out")
# GPUs whose own measured train steps fit a sustained fraction of their own (our H200 rows).
OWN_GPUS = ("H200",)
_TARGET_FIELDS = {f.name for f in dataclasses.fields(Target)}


@dataclass(frozen=True)
class Prediction:
    """The model's tokens/s per GPU for one run, and its step."""

    run: Run
    tokens_per_s_per_gpu: float
    step: StepEstimate

    @property
    def ratio(self) -> float:
        """predicted / published."""
        return self.tokens_per_s_per_gpu / self.run.tokens_per_s_per_gpu

    @property
    def error(self) -> float:
        """predicted / published − 1."""
        return self.ratio - 1.0


@dataclass(frozen=True)
class Fitted:
    """The whole-step constants the fit sets: per GPU family, the GEMMs' sustained fraction
    and the fused attention kernels' scales (the GPU table's ``step_sustained_fraction`` and
    ``attention_scale``: family → kernel → scale); per framework, its sustained scale and its
    tensor-parallel overlap (`shapelint.perf.estimate.FrameworkCalibration`)."""

    sustained: Mapping[str, float]
    attention: Mapping[str, Mapping[str, float]]
    frameworks: Mapping[str, tuple[float, float]]
    # GPUs with a sustained fraction of their own (the GPU table's entry states it): fitted on
    # the fit rows measured on that GPU, for every framework's runs on it.
    gpus: Mapping[str, float] = field(default_factory=dict)


def shipped() -> Fitted:
    """The constants shapelint ships, for the families and frameworks the fit sets."""
    gpus = {lookup(name).arch: lookup(name) for name in ("h100", "a100-80gb", "b200")}
    return Fitted(
        sustained=MappingProxyType(
            {a: g.step_sustained_fraction for a, g in gpus.items() if a in FAMILIES}
        ),
        attention=MappingProxyType({a: g.attention_scale for a, g in gpus.items()}),
        gpus=MappingProxyType({n: lookup(n).step_sustained_fraction for n in OWN_GPUS}),
        frameworks=MappingProxyType(
            {
                name: (
                    STEP_CALIBRATION.frameworks[name].sustained,
                    STEP_CALIBRATION.frameworks[name].overlap.tp,
                )
                for name in FITTED_FRAMEWORKS
            }
        ),
    )


# GPUs with fitted constants, one object per value set: the step model caches GEMM times by GPU
# object, and a fit asks for the same values many times.
_GPUS: dict[tuple[object, ...], GPU] = {}


def gpu_of(run: Run, fitted: Fitted | None = None) -> GPU:
    """The GPU of ``run`` (with the run's hardware overrides), with ``fitted``'s family
    constants where it has them (the table's where not)."""
    gpu = lookup(run.gpu)
    sustained, scales = gpu.step_sustained_fraction, dict(gpu.attention_scale)
    if fitted is not None:
        family = fitted.sustained.get(gpu.arch, fitted.sustained.get(_inherits(gpu.arch), 0.0))
        sustained = fitted.gpus.get(gpu.name, family or sustained)
        # The other frameworks' kernels: the fitted scale, else the family's the GPU table
        # inherits from, else 1 (the fit's fixed start: never the shipped value it replaces).
        for kernel in KERNELS:
            inherited = fitted.attention.get(_inherits(gpu.arch), {}).get(kernel, 1.0)
            scales[kernel] = inherited
        scales.update(fitted.attention.get(gpu.arch, {}))
        # A family whose Triton scale is not fitted takes Ampere's (the shipped inheritance).
        if KERNEL not in fitted.attention.get(gpu.arch, {}) and "ampere" in fitted.attention:
            scales[KERNEL] = fitted.attention["ampere"].get(KERNEL, scales.get(KERNEL, 1.0))
    key = (
        gpu.name,
        sustained,
        tuple(sorted(scales.items())),
        tuple(sorted(run.gpu_overrides.items())),
    )
    if key not in _GPUS:
        _GPUS[key] = dataclasses.replace(
            gpu,
            step_sustained_fraction=sustained,
            attention_scale=MappingProxyType(scales),
            **run.gpu_overrides,
        )
    return _GPUS[key]


def _inherits(arch: str) -> str:
    """The family whose sustained fraction ``arch`` takes in the GPU table (``from``), or ""."""
    spec = builtin_data().get("families", {}).get(arch, {}).get("step_sustained_fraction", {})
    return str(spec.get("from", "")) if isinstance(spec, dict) else ""


def calibration_of(fitted: Fitted | None) -> StepCalibration:
    """The shipped step calibration with ``fitted``'s framework constants."""
    if fitted is None:
        return STEP_CALIBRATION
    frameworks = dict(STEP_CALIBRATION.frameworks)
    for name, (scale, tp) in fitted.frameworks.items():
        old = frameworks[name]
        frameworks[name] = dataclasses.replace(
            old, sustained=scale, overlap=dataclasses.replace(old.overlap, tp=tp)
        )
    return dataclasses.replace(STEP_CALIBRATION, frameworks=MappingProxyType(frameworks))


def target_of(run: Run, gpu: GPU) -> Target:
    """One GPU of the published run."""
    settings = {k: v for k, v in run.settings.items() if k in _TARGET_FIELDS}
    return Target(gpu=gpu, mode="train", **settings)  # type: ignore[arg-type]


def predict(runs: Iterable[Run], fitted: Fitted | None = None) -> list[Prediction]:
    """The model's prediction for each run (with ``fitted``'s constants; default: shipped)."""
    calibration = calibration_of(fitted)
    out = []
    for run in runs:
        step = step_time(run.config, target_of(run, gpu_of(run, fitted)), calibration)
        s = run.settings
        tokens = int(s["micro_batch"]) * int(s["seq_len"])  # type: ignore[call-overload]
        out.append(Prediction(run, tokens / (run.gpus_per_step * step.total_s), step))
    return out


def usable(runs: Iterable[Run]) -> list[Run]:
    """The runs the model predicts (those without a ``skip`` reason)."""
    return [r for r in runs if not r.skip]


def arch_of(run: Run) -> str:
    """The GPU family of a run."""
    return lookup(run.gpu).arch


def framework_of(run: Run) -> str:
    """The framework of a run."""
    return str(run.settings.get("framework") or STEP_CALIBRATION.default_framework)


def _golden(loss: Callable[[float], float], lo: float, hi: float) -> float:
    g = (math.sqrt(5) - 1) / 2
    for _ in range(25):
        a, b = hi - g * (hi - lo), lo + g * (hi - lo)
        if loss(a) < loss(b):
            hi = b
        else:
            lo = a
    return round((lo + hi) / 2, 3)


def _loss(preds: list[Prediction]) -> float:
    return statistics.fmean(abs(math.log(p.ratio)) for p in preds) if preds else 0.0


def kernel_of(run: Run) -> str:
    """The attention kernel a run's settings name."""
    return str(run.settings.get("attention", "flash"))


def fit(runs: list[Run]) -> Fitted:
    """Fit every whole-step constant on ``runs`` (the fit rows; held-out rows are refused)."""
    if any(r.split != "fit" for r in runs):
        raise ValueError("fit() takes fit rows only")
    runs = usable(runs)
    foundry = [r for r in runs if r.table == "llm-foundry"]
    # A fixed start, so the fit does not depend on the constants it replaces.
    fitted = Fitted(
        sustained=MappingProxyType(dict.fromkeys(FAMILIES, 1.0)),
        attention=MappingProxyType({}),
        frameworks=MappingProxyType(dict.fromkeys(FITTED_FRAMEWORKS, (1.0, 0.0))),
        gpus=MappingProxyType({}),
    )

    def set_gpu(f: Fitted, name: str, x: float) -> Fitted:
        return dataclasses.replace(f, gpus=MappingProxyType({**f.gpus, name: x}))

    def set_sustained(f: Fitted, arch: str, x: float) -> Fitted:
        return dataclasses.replace(f, sustained=MappingProxyType({**f.sustained, arch: x}))

    def set_scale(f: Fitted, arch: str, kernel: str, x: float) -> Fitted:
        kernels = {**f.attention.get(arch, {}), kernel: x}
        return dataclasses.replace(f, attention=MappingProxyType({**f.attention, arch: kernels}))

    def set_framework(f: Fitted, name: str, scale: float, tp: float) -> Fitted:
        values = {**f.frameworks, name: (scale, tp)}
        return dataclasses.replace(f, frameworks=MappingProxyType(values))

    def best(
        change: Callable[[Fitted, float], Fitted], rows: list[Run], lo: float, hi: float
    ) -> Fitted:
        base = fitted
        x = _golden(lambda v: _loss(predict(rows, change(base, v))), lo, hi)
        return change(base, x)

    # 1. The families, on llm-foundry's rows (the reference framework).
    for _ in range(3):
        for arch in FAMILIES:
            mine = [r for r in foundry if arch_of(r) == arch]
            fitted = best(lambda f, x, a=arch: set_sustained(f, a, x), mine, 0.3, 1.0)
            fitted = best(lambda f, x, a=arch: set_scale(f, a, KERNEL, x), mine, 0.3, 1.5)
    # 2. The frameworks, and the kernels their runs use, on their own rows.
    others = [r for r in runs if r.table != "llm-foundry"]
    kernels = sorted({(arch_of(r), kernel_of(r)) for r in others if kernel_of(r) in KERNELS})
    for _ in range(3):
        for name in FITTED_FRAMEWORKS:
            mine = [r for r in others if framework_of(r) == name]
            overlapped = [r for r in mine if r.settings.get("tp_overlap")]

            def scale(f: Fitted, x: float, n: str = name) -> Fitted:
                return set_framework(f, n, x, f.frameworks[n][1])

            def overlap(f: Fitted, x: float, n: str = name) -> Fitted:
                return set_framework(f, n, f.frameworks[n][0], x)

            fitted = best(scale, mine, 0.4, 1.6)
            if overlapped:
                fitted = best(overlap, overlapped, 0.0, 1.0)
        for arch, kernel in kernels:
            mine = [r for r in others if arch_of(r) == arch and kernel_of(r) == kernel]
            fitted = best(lambda f, x, a=arch, k=kernel: set_scale(f, a, k, x), mine, 0.3, 1.5)
        for name in OWN_GPUS:
            mine = [r for r in others if lookup(r.gpu).name == name]
            fitted = best(lambda f, x, g=name: set_gpu(f, g, x), mine, 0.3, 1.0)
    return fitted


@dataclass(frozen=True)
class Summary:
    """The error of a set of predictions: rows, median |error|, share within ±20%, and the
    geometric-mean bias (exp(mean log(predicted / published)) − 1)."""

    rows: int
    median: float
    within_20: float
    bias: float
    worst: float


def summary(preds: list[Prediction]) -> Summary:
    """`Summary` of ``preds``."""
    errors = [abs(p.error) for p in preds]
    return Summary(
        rows=len(preds),
        median=statistics.median(errors),
        within_20=sum(e <= 0.20 for e in errors) / len(errors),
        bias=math.exp(statistics.fmean(math.log(p.ratio) for p in preds)) - 1.0,
        worst=max(errors),
    )


def by_table(preds: list[Prediction], split: str) -> dict[str, Summary]:
    """`summary` per table of the ``split`` rows."""
    out = {}
    for table in TABLES:
        some = [p for p in preds if p.run.table == table and p.run.split == split]
        if some:
            out[table] = summary(some)
    return out


def attention_report() -> int:
    """Print the attention model's error on the FlashAttention figures, fit and held out."""
    from shapelint.perf.attention import paper_rate

    with (DATA / "flash_attention.csv").open(encoding="utf-8") as f:
        bars = list(csv.DictReader(ln for ln in f if not ln.startswith("#")))
    for split in SPLITS:
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


def _summary_lines(preds: list[Prediction], markdown: bool) -> list[str]:
    lines = []
    if markdown:
        lines += [
            "| table | rows | rows | median error | within ±20% | bias | worst |",
            "|---|---|---|---|---|---|---|",
        ]
    for split in SPLITS:
        tables = by_table(preds, split)
        mine = [p for p in preds if p.run.split == split]
        if len(tables) > 1:
            tables["all tables"] = summary(mine)
        for table, s in tables.items():
            if markdown:
                lines.append(
                    f"| {table} | {split.replace('_', '-')} | {s.rows} | {s.median:.1%} |"
                    f" {s.within_20:.0%} | {s.bias:+.1%} | {s.worst:.1%} |"
                )
            else:
                lines.append(
                    f"{split:8s} {table:11s} rows {s.rows:3d}: median |error| {s.median:5.1%},"
                    f" within ±20% {s.within_20:4.0%}, bias {s.bias:+6.1%},"
                    f" worst {s.worst:6.1%}"
                )
    return lines


def main(argv: list[str] | None = None) -> int:
    """Print published vs predicted throughput per row and the error per table and split."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--fit", action="store_true", help="refit on the fit rows and print")
    parser.add_argument("--markdown", action="store_true", help="print Markdown tables")
    parser.add_argument("--table", choices=tuple(TABLES), help="only this table's rows")
    parser.add_argument(
        "--refit", action="store_true", help="report with constants refitted now (not shipped)"
    )
    parser.add_argument(
        "--attention", action="store_true", help="the attention model against its figures"
    )
    args = parser.parse_args(argv)
    if args.attention:
        return attention_report()
    runs = all_runs()
    if args.fit:
        fitted = fit([r for r in runs if r.split == "fit"])
        print(
            f"fitted on the fit rows: step_sustained_fraction {dict(fitted.sustained)},"
            f" attention_scale { ({a: dict(k) for a, k in fitted.attention.items()}) },"
            f" frameworks (sustained scale, tp overlap) {dict(fitted.frameworks)},"
            f" GPUs' own step_sustained_fraction {dict(fitted.gpus)}"
        )
        return 0
    refitted = fit([r for r in runs if r.split == "fit"]) if args.refit else None
    preds = predict(usable(runs), refitted)
    shown = [p for p in preds if args.table in (None, p.run.table)]
    if args.markdown:
        print("| table | run | split | published tok/s/GPU | predicted | error |")
        print("|---|---|---|---|---|---|")
    for p in shown:
        r = p.run
        if args.markdown:
            print(
                f"| {r.table} {r.part} | {r.label} | {r.split} | {r.tokens_per_s_per_gpu:.0f} |"
                f" {p.tokens_per_s_per_gpu:.0f} | {p.error:+.1%} |"
            )
        else:
            print(
                f"{r.table:11s} {r.split:8s} {r.label:66s} published"
                f" {r.tokens_per_s_per_gpu:9.1f} predicted {p.tokens_per_s_per_gpu:9.1f}"
                f" ({p.error:+6.1%})"
            )
    skipped = [r for r in runs if r.skip and args.table in (None, r.table)]
    if skipped and not args.markdown:
        print(f"not predicted ({len(skipped)} rows):")
        for r in skipped:
            print(f"  {r.table} {r.split} {r.label}: {r.skip}")
    print()
    for line in _summary_lines(shown, args.markdown):
        print(line)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

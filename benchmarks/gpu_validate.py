"""Measure on one GPU the effects that shapelint's step model predicts, in about five minutes.

Usage:
    bash benchmarks/gpu_validate.sh --out-dir DIR                  # CUDA GPU, full run
    bash benchmarks/gpu_validate.sh --device cpu --quick --out-dir DIR   # plumbing check

Sections (each with a time cap, --max-seconds; a section that reaches its cap stops, writes a
row with status "cut" and the run goes on with the next one; a section that raises writes a
row with status "error" and the run goes on too):

    gemm       torch.mm with K and/or N a multiple of 64, of 16 only, of 8 only, or odd, in three
               layouts (which operand's leading dimension holds the misaligned size), at a
               decode-like M (16) and a large M (8192); bf16, fp16, tf32 and fp32 (TF32 off),
               then fp8 (torch._scaled_mm, guarded) in the NT layout.
    lmhead     the LM-head GEMMs at 8192 tokens, hidden 4096 and 2048, vocab 128000, 128003,
               128064, 50257, 50304 (bf16): forward, dgrad and wgrad timed separately, and one
               autograd forward+backward of F.linear.
    attention  causal scaled_dot_product_attention at (batch 4, 32 heads, seq 2048), head dims
               64 ... 256, inference forward and forward+backward, with each backend forced
               (flash, efficient, cudnn, math) and with the default dispatch; "unsupported"
               where a backend refuses the shape.
    train      a Llama-style ~1B train step in plain torch (RMSNorm, RoPE, SwiGLU, SDPA, untied
               LM head, fused AdamW, bf16 parameters), a baseline and variants that change one
               thing: vocab, FFN width, head dim.
    decode     greedy decode at batch 1 with a static KV cache (prompt 512, 128 new tokens) on
               the same models, eager and as one CUDA graph per token.

Second-round sections (run only when named in --sections):

    residues   bf16 GEMMs at M 8192 with N = 4096 + r for every r in 0..64 (NT), then K, N or
               M moved by r in {1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48} in each layout where that
               dim is an operand's leading dimension; the forward, dgrad and wgrad GEMMs of the
               ~1B train model's FFN at widths 5504, 5472, 5464, 5462, 5461, 5460, 5456; tf32
               NT and bf16 at M 16 at residues 0, 1, 2, 4, 8.
    unfused    unfused attention's pieces at attention's shapes (bf16, Q/K/V as Megatron's
               sbhd views and as contiguous bhsd): QK^T (baddbmm), P.V, the four backward
               bmms, softmax forward (plain, masked_fill + softmax, fp32 scale/mask/softmax)
               and backward, and the whole path forward and forward+backward with autograd.
    decode8b   greedy decode at batch 1 (prompt 8, 200 new tokens) of Llama-3-8B's shape (GQA),
               Llama-2-7B's (MHA) and Llama-3-8B with vocab 128257, eager and CUDA graph.

Files written into --out-dir (flat names): gemm.csv, lmhead.csv, attention.csv, train.csv,
decode.csv (residues.csv, unfused.csv, decode_large.csv), env.csv and env.json. Every CSV
row carries the device name and torch version; the columns are listed in
benchmarks/README.md. Times are medians over repetitions after
warm-up; on CUDA each repetition is timed with CUDA events around a batch of calls (a CUDA
graph of the batch for the small GEMMs, so launch overhead is not measured).
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import gc
import importlib.metadata
import json
import math
import os
import platform
import re
import statistics
import subprocess
import sys
import time
import traceback
import warnings
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

# The first round's sections (the default) and the second round's, run by name.
DEFAULT_SECTIONS = ("gemm", "lmhead", "attention", "train", "decode")
SECTIONS = (*DEFAULT_SECTIONS, "residues", "unfused", "decode8b")
# Default cap per section on the GPU, seconds (the expected times are well under these).
BUDGET_S = {
    "gemm": 50.0,
    "lmhead": 30.0,
    "attention": 60.0,
    "train": 75.0,
    "decode": 40.0,
    "residues": 60.0,
    "unfused": 50.0,
    "decode8b": 80.0,
}
COMMON = ["device", "torch"]


def _cols(text: str) -> list[str]:
    return text.split()


# Columns of each CSV (described in benchmarks/README.md). The first ten of gemm.csv,
# lmhead.csv and attention.csv are gemm_sweep.py's, so validate_model.py reads those files.
SWEEP = ["kind", "b", "m", "n", "k", "dtype", "time_s", "tflops", *COMMON]
TIMING = ["method", "inner", "reps", "status", "note"]
GEMM_FIELDS = [*SWEEP, *_cols("op layout mis_dim align a_ld b_ld a_align b_align copies"), *TIMING]
ATTN_FIELDS = [*SWEEP, *_cols("batch heads seq head_dim pass backend default_choice"), *TIMING]
MODEL_FIELDS = _cols("variant group ref hidden layers heads head_dim ffn vocab params")
TRAIN_FIELDS = [
    *MODEL_FIELDS,
    *_cols("batch seq dtype step_s tokens_per_s model_tflops step_s_min step_s_max steps"),
    *_cols("peak_mem_gb sdpa_choice loss"),
    *COMMON,
    "status",
    "note",
]
DECODE_FIELDS = [
    *MODEL_FIELDS,
    *_cols("prompt gen dtype mode prefill_s decode_s tokens_per_s ms_per_token check"),
    *COMMON,
    "status",
    "note",
]
UNFUSED_FIELDS = [
    *SWEEP,
    *_cols("batch heads seq head_dim qkv_layout piece pass layout a_ld b_ld bytes gbs"),
    *TIMING,
]
DECODE_LARGE_FIELDS = [
    *MODEL_FIELDS[:6],
    "kv_heads",
    *MODEL_FIELDS[6:],
    *DECODE_FIELDS[len(MODEL_FIELDS) :],
]
ENV_FIELDS = ["key", "value", *COMMON]
OUT_FILES = {
    "gemm": ("gemm.csv", GEMM_FIELDS),
    "lmhead": ("lmhead.csv", GEMM_FIELDS),
    "attention": ("attention.csv", ATTN_FIELDS),
    "train": ("train.csv", TRAIN_FIELDS),
    "decode": ("decode.csv", DECODE_FIELDS),
    "residues": ("residues.csv", GEMM_FIELDS),
    "unfused": ("unfused.csv", UNFUSED_FIELDS),
    "decode8b": ("decode_large.csv", DECODE_LARGE_FIELDS),
}


# ----------------------------------------------------------------------------- plumbing


class Cut(Exception):
    """Raised inside a section when its time cap is reached."""


@dataclass
class Budget:
    """A section's time cap."""

    name: str
    limit_s: float
    start: float = 0.0
    cut: bool = False

    def __post_init__(self) -> None:
        self.start = time.perf_counter()

    @property
    def elapsed(self) -> float:
        return time.perf_counter() - self.start

    def over(self) -> bool:
        return self.elapsed > self.limit_s

    def check(self) -> None:
        """Raise Cut when the cap is reached (between measurements)."""
        if self.over():
            self.cut = True
            raise Cut(f"{self.name}: cap of {self.limit_s:g} s reached")


class Table:
    """One CSV file, written and flushed row by row (a killed run keeps what it measured)."""

    def __init__(self, path: Path, fields: list[str], common: dict[str, str]) -> None:
        self.path = path
        self.fields = fields
        self.common = common
        self.rows = 0
        self._f = path.open("w", newline="", encoding="utf-8")
        self._w = csv.DictWriter(self._f, fieldnames=fields, restval="")
        self._w.writeheader()
        self._f.flush()

    def row(self, **values: Any) -> None:
        out = {k: _cell(v) for k, v in values.items()}
        out.update(self.common)
        self._w.writerow(out)
        self._f.flush()
        self.rows += 1

    def close(self) -> None:
        self._f.close()


def _cell(v: Any) -> Any:
    if isinstance(v, float):
        return f"{v:.6g}"
    if isinstance(v, str):
        return " ".join(v.split())[:600]  # one line, bounded
    return v


def _short(exc: BaseException) -> str:
    text = f"{type(exc).__name__}: {exc}"
    return " ".join(text.split())[:300]


@dataclass
class Rt:
    """What every section needs: torch, the device and the run's options."""

    torch: Any
    device: str
    quick: bool
    reps: int
    device_name: str
    l2_bytes: int
    graphs: bool

    @property
    def cuda(self) -> bool:
        return self.device == "cuda"

    def sync(self) -> None:
        if self.cuda:
            self.torch.cuda.synchronize()

    def free(self) -> None:
        gc.collect()
        if self.cuda:
            self.torch.cuda.synchronize()
            self.torch.cuda.empty_cache()

    def dtype(self, name: str) -> Any:
        t = self.torch
        return {
            "bf16": t.bfloat16,
            "fp16": t.float16,
            "fp32": t.float32,
            "tf32": t.float32,
        }[name]


@dataclass
class Timing:
    time_s: float
    method: str  # "graph" | "eager"
    inner: int  # calls per timed batch
    reps: int  # timed batches (the median is over these)
    note: str = ""


def measure(
    rt: Rt,
    fns: Sequence[Callable[[], object]],
    *,
    warmup: int = 2,
    graph: bool = False,
    target_s: float = 2e-3,
    max_inner: int = 100,
) -> Timing:
    """Median seconds per call of fns (called round-robin), after warm-up.

    Each repetition times a batch of `inner` calls (chosen so a batch takes about target_s);
    on CUDA with CUDA events recorded back to back, and, when graph is set, the batch is
    captured once into a CUDA graph (falls back to eager launches if capture fails).
    """
    torch = rt.torch
    n = len(fns)
    for i in range(warmup):
        fns[i % n]()
    rt.sync()
    if not rt.cuda:
        t0 = time.perf_counter()
        fns[0]()
        est = max(time.perf_counter() - t0, 1e-7)
        inner = max(1, min(max_inner, int(target_s / est)))
        times = []
        for _ in range(rt.reps):
            t0 = time.perf_counter()
            for j in range(inner):
                fns[j % n]()
            times.append((time.perf_counter() - t0) / inner)
        return Timing(statistics.median(times), "eager", inner, rt.reps)
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    fns[0]()
    end.record()
    end.synchronize()
    est = max(start.elapsed_time(end) / 1e3, 1e-7)
    inner = max(1, min(max_inner, int(target_s / est)))
    note = ""
    run: Callable[[], object] | None = None
    if graph and inner > 1 and rt.graphs:
        try:
            run = _capture(rt, fns, inner)
        except Exception as exc:  # capture is an optimisation: time eagerly instead
            note = "graph capture failed, eager: " + _short(exc)
            with contextlib.suppress(Exception):
                torch.cuda.synchronize()
    method = "graph" if run is not None else "eager"
    if run is None:

        def run() -> None:
            for j in range(inner):
                fns[j % n]()

    run()  # the first replay uploads the graph
    events = [
        (torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
        for _ in range(rt.reps)
    ]
    for s, e in events:
        s.record()
        run()
        e.record()
    events[-1][1].synchronize()
    times = [s.elapsed_time(e) / 1e3 / inner for s, e in events]
    return Timing(statistics.median(times), method, inner, rt.reps, note)


def _capture(rt: Rt, fns: Sequence[Callable[[], object]], inner: int) -> Callable[[], object]:
    torch = rt.torch
    n = len(fns)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for i in range(3):
            fns[i % n]()
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for j in range(inner):
            fns[j % n]()
    torch.cuda.synchronize()
    return g.replay


def align_class(x: int) -> str:
    """The largest power of two up to 64 that divides x: x64, x32, ..., x2, or odd."""
    for p in (64, 32, 16, 8, 4, 2):
        if x % p == 0:
            return f"x{p}"
    return "odd"


def _ld_cols(a_ld: int, b_ld: int) -> dict[str, Any]:
    """The operands' leading dimensions (row strides as stored) and their alignment classes."""
    if not a_ld:
        return {}
    return {"a_ld": a_ld, "b_ld": b_ld, "a_align": align_class(a_ld), "b_align": align_class(b_ld)}


def _copies(rt: Rt, nbytes: int) -> int:
    """Operand copies to rotate over so one round reads ~4x the L2 (each call from HBM)."""
    if not rt.cuda:
        return 1
    return max(1, min(8, math.ceil(4 * rt.l2_bytes / max(nbytes, 1))))


def _status(exc: BaseException) -> str:
    text = str(exc)
    if "out of memory" in text.lower():
        return "oom"
    if "No available kernel" in text or "No viable backend" in text:
        return "unsupported"
    return "error"


# ----------------------------------------------------------------------------- 1. gemm

ALIGN_DELTA = {"x16": 16, "x8": 8, "odd": 1}  # added to the base (a multiple of 64)
LAYOUTS = {
    # layout: (A as stored, B as stored, expression); N = used as stored, T = transposed,
    # in torch's row-major view, A first. The leading dimension of a stored [r, c] is c.
    "NT": ("m,k", "n,k", "A @ B.t()  (X.W^T, nn.Linear forward)"),
    "NN": ("m,k", "k,n", "A @ B      (dY.W, a Linear's dgrad)"),
    "TN": ("k,m", "k,n", "A.t() @ B  (X^T.dY, a Linear's wgrad)"),
}


def gemm_cases(quick: bool) -> Iterator[dict[str, Any]]:
    """(m, n, k, layout, mis_dim): the aligned base, then K, N or both moved off 64."""
    base = 64 if quick else 4096
    for m in (8, 64) if quick else (16, 8192):
        for layout in LAYOUTS:
            yield {"m": m, "n": base, "k": base, "layout": layout, "mis_dim": "none"}
            for mis_dim in ("k", "n", "kn"):
                for delta in ALIGN_DELTA.values():
                    n = base + delta if "n" in mis_dim else base
                    k = base + delta if "k" in mis_dim else base
                    yield {"m": m, "n": n, "k": k, "layout": layout, "mis_dim": mis_dim}


def set_tf32(torch: Any, on: bool) -> str:
    """Turn TF32 matmuls on or off; returns what torch reports afterwards."""
    torch.set_float32_matmul_precision("high" if on else "highest")
    state = torch.get_float32_matmul_precision()
    with contextlib.suppress(Exception):
        state += "/" + str(torch.backends.cuda.matmul.fp32_precision)
    return state


def _operands(rt: Rt, layout: str, m: int, n: int, k: int, dtype: Any) -> tuple[Any, Any]:
    torch = rt.torch
    dims = {"m": m, "n": n, "k": k}
    a_spec, b_spec, _ = LAYOUTS[layout]
    a = torch.randn(*(dims[d] for d in a_spec.split(",")), device=rt.device, dtype=dtype)
    b = torch.randn(*(dims[d] for d in b_spec.split(",")), device=rt.device, dtype=dtype)
    return a, b


def _gemm_fn(torch: Any, layout: str, a: Any, b: Any) -> Callable[[], object]:
    if layout == "NT":
        return lambda: torch.mm(a, b.t())
    if layout == "NN":
        return lambda: torch.mm(a, b)
    return lambda: torch.mm(a.t(), b)


def section_gemm(rt: Rt, table: Table, budget: Budget) -> None:
    torch = rt.torch
    for dname in ("bf16", "fp16", "tf32", "fp32"):
        tf32_state = set_tf32(torch, dname == "tf32")
        try:
            for case in gemm_cases(rt.quick):
                budget.check()
                _gemm_row(rt, table, dname, case, tf32_state)
        finally:
            set_tf32(torch, False)
            rt.free()  # the captured graphs' memory pools
    for case in gemm_cases(rt.quick):
        if case["layout"] == "NT":
            budget.check()
            _fp8_row(rt, table, case)


def _gemm_row(rt: Rt, table: Table, dname: str, case: dict[str, Any], tf32_state: str) -> None:
    torch = rt.torch
    m, n, k, layout = case["m"], case["n"], case["k"], case["layout"]
    mis = case["mis_dim"]
    align = align_class(k if mis == "k" else n) if mis != "none" else align_class(n)
    a_ld = {"NT": k, "NN": k, "TN": m}[layout]
    b_ld = {"NT": k, "NN": n, "TN": n}[layout]
    dims = {"m": m, "n": n, "k": k}
    if mis in dims:
        align = align_class(dims[mis])
    row: dict[str, Any] = {
        "b": 1,
        "m": m,
        "n": n,
        "k": k,
        "dtype": dname,
        "op": case.get("op", "sweep"),
        "layout": layout,
        "mis_dim": mis,
        "align": align,
        **_ld_cols(a_ld, b_ld),
    }
    if dname in ("tf32", "fp32"):
        row["note"] = f"fp32 matmul precision {tf32_state}"
    dtype = rt.dtype(dname)
    pairs: list[tuple[Any, Any]] = []
    try:
        elem = torch.tensor([], dtype=dtype).element_size()
        copies = _copies(rt, (m * k + k * n + m * n) * elem)
        pairs = [_operands(rt, layout, m, n, k, dtype) for _ in range(copies)]
        fns = [_gemm_fn(torch, layout, a, b) for a, b in pairs]
        t = measure(rt, fns, graph=True)
        row.update(
            kind="gemm",
            time_s=t.time_s,
            tflops=2 * m * n * k / t.time_s / 1e12,
            copies=copies,
            method=t.method,
            inner=t.inner,
            reps=t.reps,
            status="ok",
        )
        if t.note:
            row["note"] = (row.get("note", "") + "; " + t.note).strip("; ")
    except Exception as exc:
        row.update(kind="none", status=_status(exc), note=_short(exc))
    finally:
        del pairs
    table.row(**row)
    _echo(table, row)


def _fp8_row(rt: Rt, table: Table, case: dict[str, Any]) -> None:
    """fp8 e4m3 NT GEMM through torch._scaled_mm (tensor-wise scales, bf16 out), guarded."""
    torch = rt.torch
    m, n, k, mis = case["m"], case["n"], case["k"], case["mis_dim"]
    row: dict[str, Any] = {
        "b": 1,
        "m": m,
        "n": n,
        "k": k,
        "dtype": "fp8",
        "op": "sweep",
        "layout": "NT",
        "mis_dim": mis,
        "align": align_class(k if mis == "k" else n),
        **_ld_cols(k, k),
        "note": "torch._scaled_mm e4m3, bf16 out",
    }
    pairs: list[tuple[Any, Any]] = []
    try:
        f8 = torch.float8_e4m3fn
        one = torch.ones((), device=rt.device, dtype=torch.float32)
        copies = _copies(rt, m * k + n * k + 2 * m * n)
        for _ in range(copies):
            a = torch.randn(m, k, device=rt.device, dtype=torch.bfloat16).to(f8)
            b = torch.randn(n, k, device=rt.device, dtype=torch.bfloat16).to(f8)
            pairs.append((a, b))
        fns = [
            lambda a=a, b=b: torch._scaled_mm(
                a, b.t(), scale_a=one, scale_b=one, out_dtype=torch.bfloat16
            )
            for a, b in pairs
        ]
        t = measure(rt, fns, graph=True)
        row.update(
            kind="gemm",
            time_s=t.time_s,
            tflops=2 * m * n * k / t.time_s / 1e12,
            copies=copies,
            method=t.method,
            inner=t.inner,
            reps=t.reps,
            status="ok",
        )
    except Exception as exc:
        row.update(kind="none", status="unsupported", note=_short(exc))
    finally:
        del pairs
    table.row(**row)
    _echo(table, row)


# ----------------------------------------------------------------------------- 2. lmhead


def lmhead_cases(quick: bool) -> Iterator[tuple[int, int, int]]:
    """(tokens, hidden, vocab)."""
    if quick:
        for hidden in (64, 32):
            for vocab in (1000, 1003, 1024, 257, 320):
                yield 64, hidden, vocab
        return
    for hidden in (4096, 2048):
        for vocab in (128000, 128003, 128064, 50257, 50304):
            yield 8192, hidden, vocab


def section_lmhead(rt: Rt, table: Table, budget: Budget) -> None:
    torch = rt.torch
    F = torch.nn.functional
    dt = rt.dtype("bf16")
    for tokens, hidden, vocab in lmhead_cases(rt.quick):
        budget.check()
        torch.manual_seed(0)
        x = torch.randn(tokens, hidden, device=rt.device, dtype=dt)
        w = torch.randn(vocab, hidden, device=rt.device, dtype=dt) * 0.02
        dy = torch.randn(tokens, vocab, device=rt.device, dtype=dt)
        xr = x.clone().requires_grad_(True)
        wr = w.clone().requires_grad_(True)
        ops: list[tuple[str, str, tuple[int, int, int], Callable[[], object], float]] = [
            # (op, layout, (m, n, k), fn, flops)
            ("fwd", "NT", (tokens, vocab, hidden), lambda x=x, w=w: torch.mm(x, w.t()), 1.0),
            ("dgrad", "NN", (tokens, hidden, vocab), lambda dy=dy, w=w: torch.mm(dy, w), 1.0),
            ("wgrad", "TN", (vocab, hidden, tokens), lambda dy=dy, x=x: torch.mm(dy.t(), x), 1.0),
            (
                "fwd+bwd",
                "-",
                (tokens, vocab, hidden),
                lambda xr=xr, wr=wr, dy=dy: torch.autograd.grad(F.linear(xr, wr), (xr, wr), dy),
                3.0,
            ),
        ]
        for op, layout, (m, n, k), fn, mult in ops:
            budget.check()
            a_ld, b_ld = {
                "NT": (hidden, hidden),
                "NN": (vocab, hidden),
                "TN": (vocab, hidden),
                "-": (0, 0),
            }[layout]
            row: dict[str, Any] = {
                "b": 1,
                "m": m,
                "n": n,
                "k": k,
                "dtype": "bf16",
                "op": op,
                "layout": layout,
                "mis_dim": {"fwd": "n", "dgrad": "k", "wgrad": "m", "fwd+bwd": "vocab"}[op],
                "align": align_class(vocab),
                **_ld_cols(a_ld, b_ld),
                "copies": 1,
            }
            if op == "fwd+bwd":
                row["note"] = "F.linear forward + autograd.grad (dgrad and wgrad)"
            try:
                t = measure(rt, [fn], graph=False)
                row.update(
                    kind="gemm" if op != "fwd+bwd" else "linear-fwdbwd",
                    time_s=t.time_s,
                    tflops=mult * 2 * m * n * k / t.time_s / 1e12,
                    method=t.method,
                    inner=t.inner,
                    reps=t.reps,
                    status="ok",
                )
            except Exception as exc:
                row.update(kind="none", status=_status(exc), note=_short(exc))
            table.row(**row)
            _echo(table, row)
        del x, w, dy, xr, wr, ops
        rt.free()


# ----------------------------------------------------------------------------- 3. attention

BACKENDS = ("default", "flash", "efficient", "cudnn", "math")
_SDP_NAMES = {
    "flash": "FLASH_ATTENTION",
    "efficient": "EFFICIENT_ATTENTION",
    "cudnn": "CUDNN_ATTENTION",
    "math": "MATH",
}
_SDP_SHORT = {v: k for k, v in _SDP_NAMES.items()}


def attention_cases(quick: bool) -> Iterator[tuple[int, int, int, int]]:
    """(batch, heads, seq, head_dim)."""
    if quick:
        for d in (16, 20, 64):
            yield 1, 2, 64, d
        return
    for d in (64, 80, 96, 112, 128, 132, 140, 160, 192, 256):
        yield 4, 32, 2048, d


def sdpa_choice(torch: Any, q: Any, k: Any, v: Any, **kw: Any) -> str:
    """The backend torch's default dispatch picks for these inputs (torch._fused_sdp_choice)."""
    try:
        from torch.nn.attention import SDPBackend

        name = SDPBackend(torch._fused_sdp_choice(q, k, v, **kw)).name
        return _SDP_SHORT.get(name, name.lower())
    except Exception as exc:
        return "unknown (" + _short(exc)[:80] + ")"


def _forced(torch: Any, backend: str) -> contextlib.AbstractContextManager[Any]:
    if backend == "default":
        return contextlib.nullcontext()
    from torch.nn.attention import SDPBackend, sdpa_kernel

    member = getattr(SDPBackend, _SDP_NAMES[backend], None)
    if member is None:
        raise RuntimeError(f"No available kernel: this torch has no SDPBackend.{backend}")
    return sdpa_kernel([member])


def _reasons(caught: list[warnings.WarningMessage]) -> list[str]:
    """torch's warnings on why a backend refused the inputs, without the C++ source location."""
    out: list[str] = []
    for w in caught:
        text = re.sub(r"\s*\(Triggered internally at [^)]*\)\s*", " ", str(w.message)).strip()
        if text and "NumPy" not in text and text not in out:
            out.append(text)
    return out


def section_attention(rt: Rt, table: Table, budget: Budget) -> None:
    torch = rt.torch
    sdpa = torch.nn.functional.scaled_dot_product_attention
    dt = rt.dtype("bf16")
    for batch, heads, seq, d in attention_cases(rt.quick):
        budget.check()
        torch.manual_seed(0)
        shape = (batch, heads, seq, d)
        q, k, v = (torch.randn(*shape, device=rt.device, dtype=dt) for _ in range(3))
        qg, kg, vg = (t.clone().requires_grad_(True) for t in (q, k, v))
        dout = torch.randn(*shape, device=rt.device, dtype=dt)
        choice = {
            "fwd": sdpa_choice(torch, q, k, v, is_causal=True),
            "fwd+bwd": sdpa_choice(torch, qg, kg, vg, is_causal=True),
        }

        def fwd(q: Any = q, k: Any = k, v: Any = v) -> object:
            with torch.no_grad():
                return sdpa(q, k, v, is_causal=True)

        def fwdbwd(q: Any = qg, k: Any = kg, v: Any = vg, dout: Any = dout) -> object:
            out = sdpa(q, k, v, is_causal=True)
            return torch.autograd.grad(out, (q, k, v), dout)

        flops_fwd = 4 * batch * heads * seq * seq * d * 0.5
        for backend in BACKENDS:
            for pss, fn, mult in (("fwd", fwd, 1.0), ("fwd+bwd", fwdbwd, 3.5)):
                budget.check()
                row: dict[str, Any] = {
                    "b": batch * heads,
                    "m": seq,
                    "n": seq,
                    "k": d,
                    "dtype": "bf16" if dt == torch.bfloat16 else str(dt),
                    "batch": batch,
                    "heads": heads,
                    "seq": seq,
                    "head_dim": d,
                    "pass": pss,
                    "backend": backend,
                    "default_choice": choice[pss],
                }
                kind = "sdpa" if (backend, pss) == ("flash", "fwd") else f"sdpa-{backend}-{pss}"
                with warnings.catch_warnings(record=True) as caught:
                    warnings.simplefilter("always")
                    try:
                        with _forced(torch, backend):
                            t = measure(rt, [fn], graph=False, warmup=2)
                        row.update(
                            kind=kind,
                            time_s=t.time_s,
                            tflops=mult * flops_fwd / t.time_s / 1e12,
                            method=t.method,
                            inner=t.inner,
                            reps=t.reps,
                            status="ok",
                        )
                    except Exception as exc:
                        note = " | ".join([_short(exc), *_reasons(caught)])
                        row.update(kind="none", status=_status(exc), note=note)
                table.row(**row)
                _echo(table, row)
                if row["status"] == "oom":
                    rt.free()
        del q, k, v, qg, kg, vg, dout, fwd, fwdbwd
        rt.free()


# ----------------------------------------------------------------------------- model


@dataclass(frozen=True)
class ModelCfg:
    variant: str
    group: str  # what the variant changes
    ref: str  # the variant to compare it with ("" for a reference)
    hidden: int
    layers: int
    heads: int
    head_dim: int
    ffn: int
    vocab: int
    kv_heads: int = 0  # key/value heads (GQA); 0 = heads (MHA, the first round's models)


def model_variants(quick: bool) -> list[ModelCfg]:
    """Baseline and one-change variants, most important first (a cut drops the tail).

    Pairs: vocab 50257 vs base (50304); FFN 5461 (odd) vs 5504 (x64); head dim 80 at hidden
    2560 (32 x 80) vs 2560 (20 x 128): same parameters and FLOPs, only the head dim differs;
    FFN 5464 (x8 only) vs 5504 last.
    """
    if quick:
        b = ModelCfg("base", "reference", "", 64, 2, 4, 16, 160, 320)
        return [
            b,
            _v(b, "vocab257", "vocab", "base", vocab=257),
            _v(b, "ffn192", "ffn", "", ffn=192),
            _v(b, "ffn171", "ffn", "ffn192", ffn=171),
            _v(b, "h80-5x16", "head_dim", "", hidden=80, heads=5, head_dim=16),
            _v(b, "h80-8x10", "head_dim", "h80-5x16", hidden=80, heads=8, head_dim=10),
            _v(b, "ffn168", "ffn", "ffn192", ffn=168),
        ]
    b = ModelCfg("base", "reference", "", 2048, 16, 16, 128, 5632, 50304)
    return [
        b,
        _v(b, "vocab50257", "vocab", "base", vocab=50257),
        _v(b, "ffn5504", "ffn", "", ffn=5504),
        _v(b, "ffn5461", "ffn", "ffn5504", ffn=5461),
        _v(b, "h2560-20x128", "head_dim", "", hidden=2560, heads=20, head_dim=128),
        _v(b, "h2560-32x80", "head_dim", "h2560-20x128", hidden=2560, heads=32, head_dim=80),
        _v(b, "ffn5464", "ffn", "ffn5504", ffn=5464),
    ]


def _v(base: ModelCfg, variant: str, group: str, ref: str, **changes: int) -> ModelCfg:
    return ModelCfg(**{**asdict(base), "variant": variant, "group": group, "ref": ref, **changes})


def build_model(rt: Rt, cfg: ModelCfg, max_pos: int, dtype: Any) -> Any:
    """A Llama-style decoder in plain torch (MHA, RoPE, RMSNorm, SwiGLU, untied head)."""
    torch = rt.torch
    nn = torch.nn
    F = torch.nn.functional
    kw = {"device": rt.device, "dtype": dtype}
    h, nh, hd = cfg.hidden, cfg.heads, cfg.head_dim
    kvh = cfg.kv_heads or nh

    def norm(x: Any, w: Any) -> Any:
        if hasattr(F, "rms_norm"):
            return F.rms_norm(x, (x.shape[-1],), w, 1e-5)
        xf = x.float()
        return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + 1e-5)).to(x.dtype) * w

    def rope(x: Any, cos: Any, sin: Any) -> Any:
        x1, x2 = x[..., : hd // 2], x[..., hd // 2 :]
        return torch.cat((x1 * cos - x2 * sin, x2 * cos + x1 * sin), dim=-1)

    class Block(nn.Module):  # type: ignore[misc]
        def __init__(self) -> None:
            super().__init__()
            self.n1 = nn.Parameter(torch.ones(h, **kw))
            self.n2 = nn.Parameter(torch.ones(h, **kw))
            self.wq = nn.Linear(h, nh * hd, bias=False, **kw)
            self.wk = nn.Linear(h, kvh * hd, bias=False, **kw)
            self.wv = nn.Linear(h, kvh * hd, bias=False, **kw)
            self.wo = nn.Linear(nh * hd, h, bias=False, **kw)
            self.w1 = nn.Linear(h, cfg.ffn, bias=False, **kw)
            self.w3 = nn.Linear(h, cfg.ffn, bias=False, **kw)
            self.w2 = nn.Linear(cfg.ffn, h, bias=False, **kw)

        def forward(self, x: Any, cos: Any, sin: Any, cache: Any, pos: Any, mask: Any) -> Any:
            bsz, t, _ = x.shape
            y = norm(x, self.n1)
            q = self.wq(y).view(bsz, t, nh, hd).transpose(1, 2)
            k = self.wk(y).view(bsz, t, kvh, hd).transpose(1, 2)
            v = self.wv(y).view(bsz, t, kvh, hd).transpose(1, 2)
            q, k = rope(q, cos, sin), rope(k, cos, sin)
            if cache is not None:
                kc, vc = cache
                kc.index_copy_(2, pos, k)
                vc.index_copy_(2, pos, v)
                if mask is not None:  # decode: attend over the whole static cache, masked
                    k, v = kc, vc
            if kvh != nh:  # GQA as gpt-fast runs it: repeat the KV heads, then plain SDPA
                k = k.repeat_interleave(nh // kvh, dim=1)
                v = v.repeat_interleave(nh // kvh, dim=1)
            if mask is None:
                a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            else:
                a = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
            x = x + self.wo(a.transpose(1, 2).reshape(bsz, t, nh * hd))
            y = norm(x, self.n2)
            return x + self.w2(F.silu(self.w1(y)) * self.w3(y))

    class Model(nn.Module):  # type: ignore[misc]
        def __init__(self) -> None:
            super().__init__()
            self.emb = nn.Embedding(cfg.vocab, h, **kw)
            self.blocks = nn.ModuleList(Block() for _ in range(cfg.layers))
            self.nf = nn.Parameter(torch.ones(h, **kw))
            self.head = nn.Linear(h, cfg.vocab, bias=False, **kw)
            inv = 1.0 / (10000 ** (torch.arange(0, hd, 2, device=rt.device).float() / hd))
            ang = torch.arange(max_pos, device=rt.device).float()[:, None] * inv[None, :]
            self.register_buffer("cos_t", ang.cos().to(dtype), persistent=False)
            self.register_buffer("sin_t", ang.sin().to(dtype), persistent=False)

        def forward(
            self,
            tokens: Any,
            pos: Any,
            caches: Any = None,
            mask: Any = None,
            last_only: bool = False,
        ) -> Any:
            x = self.emb(tokens)
            cos, sin = self.cos_t.index_select(0, pos), self.sin_t.index_select(0, pos)
            for i, blk in enumerate(self.blocks):
                x = blk(x, cos, sin, None if caches is None else caches[i], pos, mask)
            if last_only:
                x = x[:, -1:]
            return self.head(norm(x, self.nf))

    return Model()


def _model_row(cfg: ModelCfg, model: Any = None) -> dict[str, Any]:
    row: dict[str, Any] = asdict(cfg)
    if not cfg.kv_heads:  # the first round's files have no kv_heads column
        del row["kv_heads"]
    if model is not None:
        row["params"] = sum(p.numel() for p in model.parameters())
    return row


def _dtype_name(rt: Rt, dtype: Any) -> str:
    return {rt.torch.bfloat16: "bf16", rt.torch.float16: "fp16"}.get(dtype, "fp32")


def _model_dtype(rt: Rt) -> Any:
    return rt.torch.bfloat16


# ----------------------------------------------------------------------------- 4. train


def section_train(rt: Rt, table: Table, budget: Budget) -> None:
    batch, seq, warmup, steps = (2, 32, 1, 3) if rt.quick else (4, 2048, 3, 10)
    for cfg in model_variants(rt.quick):
        budget.check()
        row = _model_row(cfg)
        row.update(batch=batch, seq=seq)
        try:
            _train_variant(rt, cfg, row, batch, seq, warmup, steps, budget)
        except Exception as exc:
            row.update(status=_status(exc), note=_short(exc))
        rt.free()
        table.row(**row)
        _echo(table, row)


def _train_variant(
    rt: Rt,
    cfg: ModelCfg,
    row: dict[str, Any],
    batch: int,
    seq: int,
    warmup: int,
    steps: int,
    budget: Budget,
) -> None:
    torch = rt.torch
    F = torch.nn.functional
    dtype = _model_dtype(rt)
    row["dtype"] = _dtype_name(rt, dtype)
    torch.manual_seed(0)
    model = build_model(rt, cfg, seq, dtype)
    row.update(_model_row(cfg, model))
    try:
        opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=rt.cuda)
        fused = rt.cuda
    except Exception:
        opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
        fused = False
    data = torch.randint(0, cfg.vocab, (batch, seq + 1), device=rt.device)
    inp, tgt = data[:, :-1].contiguous(), data[:, 1:].contiguous()
    pos = torch.arange(seq, device=rt.device)
    q = torch.zeros(batch, cfg.heads, seq, cfg.head_dim, device=rt.device, dtype=dtype)
    q.requires_grad_(True)
    row["sdpa_choice"] = sdpa_choice(torch, q, q, q, is_causal=True)
    del q

    def step() -> Any:
        opt.zero_grad(set_to_none=True)
        logits = model(inp, pos)
        loss = F.cross_entropy(logits.float().view(-1, cfg.vocab), tgt.view(-1))
        loss.backward()
        opt.step()
        return loss.detach()

    if rt.cuda:
        torch.cuda.reset_peak_memory_stats()
    for _ in range(warmup):
        loss = step()
    rt.sync()
    times: list[float] = []
    note = "AdamW fused" if fused else "AdamW"
    for i in range(steps):
        if i >= 2 and budget.over():
            note += f"; cut after {i} timed steps"
            budget.cut = True
            break
        t0 = time.perf_counter()
        loss = step()
        rt.sync()
        times.append(time.perf_counter() - t0)
    step_s = statistics.median(times)
    tokens = batch * seq
    matmul_params = sum(
        p.numel() for name, p in model.named_parameters() if p.dim() == 2 and "emb" not in name
    )
    attn = cfg.layers * 4 * batch * cfg.heads * seq * seq * cfg.head_dim * 0.5
    flops = 6 * matmul_params * tokens + 3 * attn
    row.update(
        step_s=step_s,
        tokens_per_s=tokens / step_s,
        model_tflops=flops / step_s / 1e12,
        step_s_min=min(times),
        step_s_max=max(times),
        steps=len(times),
        loss=float(loss),
        peak_mem_gb=torch.cuda.max_memory_allocated() / 2**30 if rt.cuda else "",
        status="ok" if math.isfinite(float(loss)) else "nonfinite-loss",
        note=note,
    )


# ----------------------------------------------------------------------------- 5. decode


def section_decode(rt: Rt, table: Table, budget: Budget) -> None:
    prompt, gen = (8, 4) if rt.quick else (512, 128)
    variants = [c for c in model_variants(rt.quick) if c.variant not in ("ffn5464", "ffn168")]
    for cfg in variants:
        budget.check()
        rows = _decode_variant(rt, cfg, prompt, gen)
        for row in rows:
            table.row(**row)
            _echo(table, row)
        rt.free()


def _decode_variant(rt: Rt, cfg: ModelCfg, prompt: int, gen: int) -> list[dict[str, Any]]:
    torch = rt.torch
    dtype = _model_dtype(rt)
    base = _model_row(cfg)
    base.update(prompt=prompt, gen=gen, dtype=_dtype_name(rt, dtype))
    eager = {**base, "mode": "eager"}
    graph = {**base, "mode": "graph"}
    try:
        torch.manual_seed(0)
        lmax = -(-(prompt + gen + 2) // 64) * 64  # a multiple of 64: an aligned mask row
        model = build_model(rt, cfg, lmax, dtype)
        eager.update(_model_row(cfg, model))
        graph["params"] = eager["params"]
        shape = (1, cfg.kv_heads or cfg.heads, lmax, cfg.head_dim)
        caches = [
            (
                torch.zeros(shape, device=rt.device, dtype=dtype),
                torch.zeros(shape, device=rt.device, dtype=dtype),
            )
            for _ in range(cfg.layers)
        ]
        prompt_ids = torch.randint(0, cfg.vocab, (1, prompt), device=rt.device)
        ppos = torch.arange(prompt, device=rt.device)
        ar = torch.arange(lmax, device=rt.device)
        tok = torch.zeros(1, 1, dtype=torch.long, device=rt.device)
        pos = torch.zeros(1, dtype=torch.long, device=rt.device)
        out = torch.zeros(lmax + 1, dtype=torch.long, device=rt.device)

        @torch.no_grad()  # type: ignore[misc]
        def prefill() -> Any:
            logits = model(prompt_ids, ppos, caches, None, last_only=True)
            return logits[:, -1].argmax(-1)

        @torch.no_grad()  # type: ignore[misc]
        def step() -> None:
            mask = (ar <= pos).view(1, 1, 1, lmax)
            logits = model(tok, pos, caches, mask)
            nxt = logits[:, -1].argmax(-1)
            out.index_copy_(0, pos + 1, nxt)
            tok.copy_(nxt.view(1, 1))
            pos.add_(1)

        def reset(first: Any) -> None:
            tok.copy_(first.view(1, 1))
            pos.fill_(prompt)
            out.zero_()
            out[prompt] = first[0]

        prefill()
        rt.sync()
        pre = []
        for _ in range(3):
            t0 = time.perf_counter()
            first = prefill()
            rt.sync()
            pre.append(time.perf_counter() - t0)
        prefill_s = statistics.median(pre)
        eager["prefill_s"] = graph["prefill_s"] = prefill_s
        # eager decode: one warm run, then timed runs
        runs = []
        for _ in range(2 if rt.cuda else 1):
            reset(first)
            rt.sync()
            t0 = time.perf_counter()
            for _ in range(gen):
                step()
            rt.sync()
            runs.append(time.perf_counter() - t0)
        decode_s = min(runs) if len(runs) == 1 else statistics.median(runs[1:])
        ref_tokens = out[prompt : prompt + gen + 1].tolist()
        eager.update(
            decode_s=decode_s,
            tokens_per_s=gen / decode_s,
            ms_per_token=decode_s / gen * 1e3,
            check=_cache_check(rt, model, prompt_ids, ref_tokens),
            status="ok",
        )
        qd = torch.zeros(1, cfg.heads, 1, cfg.head_dim, device=rt.device, dtype=dtype)
        kd = caches[0][0].repeat_interleave(cfg.heads // (cfg.kv_heads or cfg.heads), dim=1)
        mask = (ar <= prompt).view(1, 1, 1, lmax)
        eager["note"] = "sdpa default: " + sdpa_choice(torch, qd, kd, kd, attn_mask=mask)
        if not rt.cuda:
            graph.update(status="unsupported", note="CUDA graphs need a CUDA device")
            return [eager, graph]
        failures = []
        for backend in ("default", "efficient", "math"):
            try:
                with _forced(torch, backend):
                    g = _capture_decode(rt, step, lambda: reset(first))
                graph["note"] = f"sdpa {backend}" + "".join("; " + f for f in failures)
                break
            except Exception as exc:  # try the next backend
                failures.append(f"capture with sdpa {backend} failed: {_short(exc)[:200]}")
                with contextlib.suppress(Exception):
                    torch.cuda.synchronize()
        else:
            graph.update(status="error", note="; ".join(failures))
            return [eager, graph]
        try:
            times = []
            for _ in range(3):
                reset(first)
                s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                s.record()
                for _ in range(gen):
                    g.replay()
                e.record()
                e.synchronize()
                times.append(s.elapsed_time(e) / 1e3)
            gtokens = out[prompt : prompt + gen + 1].tolist()
            same = sum(a == b for a, b in zip(gtokens, ref_tokens, strict=True))
            decode_s = statistics.median(times)
            graph.update(
                decode_s=decode_s,
                tokens_per_s=gen / decode_s,
                ms_per_token=decode_s / gen * 1e3,
                check=f"graph tokens equal to eager: {same}/{len(ref_tokens)}",
                status="ok",
            )
            del g
        except Exception as exc:
            graph.update(status=_status(exc), note=_short(exc))
    except Exception as exc:
        for row in (eager, graph):
            if "status" not in row:
                row.update(status=_status(exc), note=_short(exc))
    return [eager, graph]


def _capture_decode(rt: Rt, step: Callable[[], None], reset: Callable[[], None]) -> Any:
    """One decode step as a CUDA graph (warm-up on a side stream first, as torch asks)."""
    torch = rt.torch
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        reset()
        for _ in range(3):
            step()
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    reset()
    with torch.cuda.graph(g):
        step()
    torch.cuda.synchronize()
    return g


def _cache_check(rt: Rt, model: Any, prompt_ids: Any, tokens: list[int], n: int = 4) -> str:
    """Greedy tokens from the KV cache against a full forward without cache (first n)."""
    torch = rt.torch
    try:
        agree = 0
        n = min(n, len(tokens) - 1)
        with torch.no_grad():
            for j in range(n):
                extra = torch.tensor([tokens[: j + 1]], device=rt.device)
                seq = torch.cat((prompt_ids, extra), dim=1)
                pos = torch.arange(seq.shape[1], device=rt.device)
                nxt = int(model(seq, pos, last_only=True)[0, -1].argmax())
                agree += nxt == tokens[j + 1]
        return f"cache vs no-cache greedy tokens equal: {agree}/{n}"
    except Exception as exc:
        return "cache check failed: " + _short(exc)


# ----------------------------------------------------------------------------- 6. residues
# Second round: which misalignments send cuBLAS to its slow kernel family, per operand.

# One residue or more per alignment class of a bf16 dim (x64 ... x2, odd).
RESIDUES = (0, 1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48)
# FFN widths of the ~1B train model (hidden 2048): x32, x32, x8, x2, odd, x4, x16.
FFN_WIDTHS = (5504, 5472, 5464, 5462, 5461, 5460, 5456)


def residue_cases(quick: bool) -> Iterator[dict[str, Any]]:
    """GEMM cases of the residue sweep, most important first (a cut drops the tail).

    1. bf16 NT at M 8192, K 4096, N = 4096 + r for every r in 0..64 (only C's leading
       dimension moves); 2. bf16 at the coarse residues for each other (layout, dim) pair
       that moves an operand's leading dimension; 3. the FFN GEMMs of the ~1B train step
       (forward, dgrad, wgrad of the up and down projections) at widths around 5504;
       4. tf32 NT and bf16 at M 16 at residues 0, 1, 2, 4, 8.
    """
    base, big = (64, 64) if quick else (4096, 8192)
    fine = range(0, 65, 16) if quick else range(0, 65)
    coarse = (0, 1, 2, 4, 8) if quick else RESIDUES
    for r in fine:
        yield {"dtype": "bf16", "m": big, "n": base + r, "k": base, "layout": "NT", "mis_dim": "n"}
    for layout, dim in (("NT", "k"), ("NN", "n"), ("NN", "k"), ("TN", "m"), ("TN", "n")):
        for r in coarse:
            dims = {"m": big, "n": base, "k": base}
            dims[dim] += r
            yield {"dtype": "bf16", **dims, "layout": layout, "mis_dim": dim}
    tokens, hidden = (64, 32) if quick else (8192, 2048)
    widths = (192, 171, 172, 170, 168) if quick else FFN_WIDTHS
    for f in widths:
        for lin, (din, dout) in (("up", (hidden, f)), ("down", (f, hidden))):
            # A Linear(din, dout) on X[tokens, din] with W[dout, din]; the FFN width's role.
            role = "n" if dout == f else "k"
            yield {
                "dtype": "bf16",
                "m": tokens,
                "n": dout,
                "k": din,
                "layout": "NT",
                "mis_dim": role,
                "op": f"{lin}-fwd",
            }
            yield {
                "dtype": "bf16",
                "m": tokens,
                "n": din,
                "k": dout,
                "layout": "NN",
                "mis_dim": "k" if role == "n" else "n",
                "op": f"{lin}-dgrad",
            }
            yield {
                "dtype": "bf16",
                "m": dout,
                "n": din,
                "k": tokens,
                "layout": "TN",
                "mis_dim": "m" if role == "n" else "n",
                "op": f"{lin}-wgrad",
            }
    for dname, m in (("tf32", big), ("bf16", 8 if quick else 16)):
        for dim in ("n", "k"):
            for r in (0, 1, 2, 4, 8):
                dims = {"m": m, "n": base, "k": base}
                dims[dim] += r
                yield {"dtype": dname, **dims, "layout": "NT", "mis_dim": dim}


def section_residues(rt: Rt, table: Table, budget: Budget) -> None:
    torch = rt.torch
    tf32_state = set_tf32(torch, False)
    try:
        for case in residue_cases(rt.quick):
            budget.check()
            dname = case.pop("dtype")
            tf32_state = set_tf32(torch, dname == "tf32")
            _gemm_row(rt, table, dname, case, tf32_state)
    finally:
        set_tf32(torch, False)
        rt.free()


# ----------------------------------------------------------------------------- 7. unfused
# Second round: the pieces of unfused attention (what Megatron/Transformer Engine run when the
# fused kernels refuse a head dim), each timed alone, and the whole path with autograd.


def unfused_cases(quick: bool) -> Iterator[tuple[int, int, int, int]]:
    """(batch, heads, seq, head_dim): attention.csv's shapes."""
    if quick:
        for d in (16, 20):
            yield 1, 2, 64, d
        return
    for d in (64, 80, 96, 112, 128, 132, 140, 160, 192, 256):
        yield 4, 32, 2048, d


def section_unfused(rt: Rt, table: Table, budget: Budget) -> None:
    for batch, heads, seq, d in unfused_cases(rt.quick):
        for qkv_layout in ("sbhd", "bhsd"):
            budget.check()
            _unfused_shape(rt, table, budget, batch, heads, seq, d, qkv_layout)
            rt.free()


def _unfused_shape(
    rt: Rt, table: Table, budget: Budget, batch: int, heads: int, seq: int, d: int, qkv: str
) -> None:
    """One (shape, Q/K/V layout): the bmms forward and backward, the softmax variants (once,
    with the bhsd layout: the scores are contiguous either way) and the whole path.

    ``sbhd`` is Megatron's and Transformer Engine's layout ([s, b·h, d] tensors used through
    transposed views: leading dimension b·h·d, batch stride d); ``bhsd`` is contiguous
    [b·h, s, d].
    """
    torch = rt.torch
    dt = rt.dtype("bf16")
    bh, s = batch * heads, seq
    scale = 1.0 / math.sqrt(d)
    torch.manual_seed(0)

    def qkv_tensor() -> Any:
        if qkv == "sbhd":
            return torch.randn(s, bh, d, device=rt.device, dtype=dt).transpose(0, 1)
        return torch.randn(bh, s, d, device=rt.device, dtype=dt)

    q, k, v, dout = (qkv_tensor() for _ in range(4))
    scores = torch.randn(bh, s, s, device=rt.device, dtype=dt)
    buf = torch.empty(bh, s, s, device=rt.device, dtype=dt)
    p = torch.softmax(scores, -1)
    dp = torch.randn(bh, s, s, device=rt.device, dtype=dt)
    mask = torch.ones(s, s, device=rt.device, dtype=torch.bool).triu(1)
    elems = bh * s * s
    common = {
        "b": bh,
        "dtype": "bf16",
        "batch": batch,
        "heads": heads,
        "seq": seq,
        "head_dim": d,
        "qkv_layout": qkv,
    }
    ld = q.stride(1)  # the row stride of Q, K, V and dO as the bmms see them
    bmms: list[tuple[str, str, str, tuple[int, int, int], int, int, Callable[[], object]]] = [
        # (piece, pass, layout, (m, n, k), a_ld, b_ld, fn)
        (
            "qk",
            "fwd",
            "NT",
            (s, s, d),
            ld,
            ld,
            lambda: torch.baddbmm(buf, q, k.transpose(1, 2), beta=0.0, alpha=scale),
        ),
        ("pv", "fwd", "NN", (s, d, s), s, ld, lambda: torch.bmm(p, v)),
        ("dp=do.vT", "bwd", "NT", (s, s, d), ld, ld, lambda: torch.bmm(dout, v.transpose(1, 2))),
        ("dv=pT.do", "bwd", "TN", (s, d, s), s, ld, lambda: torch.bmm(p.transpose(1, 2), dout)),
        ("dq=ds.k", "bwd", "NN", (s, d, s), s, ld, lambda: torch.bmm(dp, k)),
        ("dk=dsT.q", "bwd", "TN", (s, d, s), s, ld, lambda: torch.bmm(dp.transpose(1, 2), q)),
    ]
    for piece, pss, layout, (m, n, kk), a_ld, b_ld, fn in bmms:
        budget.check()
        row = {
            **common,
            "m": m,
            "n": n,
            "k": kk,
            "piece": piece,
            "pass": pss,
            "layout": layout,
            "a_ld": a_ld,
            "b_ld": b_ld,
        }
        nbytes = 2 * bh * (m * kk + kk * n + m * n)
        _unfused_row(rt, table, row, [fn], 2.0 * bh * m * n * kk, nbytes, "bmm")

    if qkv == "bhsd":

        def softmax_fp32() -> object:  # Megatron's softmax_in_fp32 path without its kernel
            x = scores.float() * scale
            x.masked_fill_(mask, -10000.0)
            return torch.softmax(x, -1).to(dt)

        memory: list[tuple[str, str, float, Callable[[], object]]] = [
            # (piece, pass, bytes moved at the least, fn)
            ("softmax", "fwd", 4.0 * elems, lambda: torch.softmax(scores, -1)),
            (
                "masked_fill+softmax",
                "fwd",
                8.0 * elems,
                lambda: torch.softmax(scores.masked_fill(mask, float("-inf")), -1),
            ),
            ("scale+mask+softmax-fp32", "fwd", 4.0 * elems, softmax_fp32),
            (
                "softmax_bwd",
                "bwd",
                6.0 * elems,
                lambda: torch._softmax_backward_data(dp, p, -1, dt),
            ),
        ]
        for piece, pss, nbytes, fn in memory:
            budget.check()
            row = {**common, "m": s, "n": s, "k": d, "piece": piece, "pass": pss}
            _unfused_row(rt, table, row, [fn], 0.0, nbytes, "softmax")

    def path(q: Any, k: Any, v: Any) -> Any:
        x = torch.baddbmm(
            torch.empty(bh, s, s, device=rt.device, dtype=dt),
            q,
            k.transpose(1, 2),
            beta=0.0,
            alpha=scale,
        )
        return torch.bmm(torch.softmax(x.masked_fill(mask, float("-inf")), -1), v)

    # Leaves with the same strides as q, k, v (sbhd: transposed views of [s, b*h, d]).
    qg, kg, vg = (t.detach().requires_grad_(True) for t in (q, k, v))

    def fwd() -> object:
        with torch.no_grad():
            return path(q, k, v)

    def fwdbwd() -> object:
        return torch.autograd.grad(path(qg, kg, vg), (qg, kg, vg), dout)

    flops = 4.0 * bh * s * s * d  # the whole s x s product: the unfused path skips nothing
    for pss, fn, mult in (("fwd", fwd, 1.0), ("fwd+bwd", fwdbwd, 3.0)):
        budget.check()
        row = {
            **common,
            "m": s,
            "n": s,
            "k": d,
            "piece": "unfused",
            "pass": pss,
            "a_ld": ld,
            "b_ld": ld,
        }
        _unfused_row(rt, table, row, [fn], mult * flops, 0.0, "unfused")


def _unfused_row(
    rt: Rt,
    table: Table,
    row: dict[str, Any],
    fns: list[Callable[[], object]],
    flops: float,
    nbytes: float,
    kind: str,
) -> None:
    try:
        t = measure(rt, fns, graph=False)
        row.update(
            kind=kind,
            time_s=t.time_s,
            tflops=flops / t.time_s / 1e12 if flops else "",
            bytes=nbytes or "",
            gbs=nbytes / t.time_s / 1e9 if nbytes else "",
            method=t.method,
            inner=t.inner,
            reps=t.reps,
            status="ok",
        )
    except Exception as exc:
        row.update(kind="none", status=_status(exc), note=_short(exc))
        if row["status"] == "oom":
            rt.free()
    table.row(**row)
    _echo(table, row)


# ----------------------------------------------------------------------------- 8. decode8b
# Second round: greedy decode at batch 1 of 7-8B-shaped models (bf16, random weights), the
# shapes of the published single-stream rates (gpt-fast, torchao: prompt ~5 tokens, 200 new).


def large_decode_models(quick: bool) -> list[ModelCfg]:
    """Llama-3-8B's shape (GQA 32/8), Llama-2-7B's (MHA) and Llama-3-8B with an odd vocab."""
    if quick:
        b = ModelCfg("llama3-8b", "reference", "", 64, 2, 4, 16, 224, 320, kv_heads=2)
        return [
            b,
            _v(b, "llama2-7b", "reference", "", ffn=172, vocab=256, kv_heads=4),
            _v(b, "llama3-8b-vocab321", "vocab", "llama3-8b", vocab=321),
        ]
    b = ModelCfg("llama3-8b", "reference", "", 4096, 32, 32, 128, 14336, 128256, kv_heads=8)
    return [
        b,
        _v(b, "llama2-7b", "reference", "", ffn=11008, vocab=32000, kv_heads=32),
        _v(b, "llama3-8b-vocab128257", "vocab", "llama3-8b", vocab=128257),
    ]


def section_decode8b(rt: Rt, table: Table, budget: Budget) -> None:
    prompt, gen = (8, 4) if rt.quick else (8, 200)
    for cfg in large_decode_models(rt.quick):
        budget.check()
        rows = _decode_variant(rt, cfg, prompt, gen)
        for row in rows:
            table.row(**row)
            _echo(table, row)
        rt.free()


# ----------------------------------------------------------------------------- env


def _run(cmd: list[str]) -> str:
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=15, check=False)
        return (r.stdout or r.stderr).strip()
    except Exception as exc:
        return "unavailable: " + _short(exc)


def nvidia_smi() -> dict[str, str]:
    fields = [
        "name",
        "driver_version",
        "clocks.sm",
        "clocks.max.sm",
        "clocks.mem",
        "clocks.max.mem",
        "power.draw",
        "power.limit",
        "temperature.gpu",
        "pstate",
        "persistence_mode",
        "compute_mode",
        "memory.used",
        "memory.total",
    ]
    out = _smi_query(fields)
    for name in ("clocks_event_reasons.active", "clocks_throttle_reasons.active"):
        reasons = _smi_query([name])  # renamed in newer drivers; an unknown name fails alone
        if "nvidia_smi" not in reasons:
            out.update(reasons)
            break
    return out


def _smi_query(fields: list[str]) -> dict[str, str]:
    text = _run(["nvidia-smi", f"--query-gpu={','.join(fields)}", "--format=csv,noheader"])
    first = text.splitlines()[0] if text else ""
    parts = [p.strip() for p in first.split(",")]
    if len(parts) != len(fields) or "Field" in first:
        return {"nvidia_smi": first[:300] or "no output"}
    return {f"smi.{f}": p for f, p in zip(fields, parts, strict=True)}


def _cublas_version() -> str:
    """cuBLAS's own version, from the library torch loaded (ctypes; guarded)."""
    import ctypes

    try:
        paths = set(re.findall(r"(/\S*libcublas\.so[.\d]*)", Path("/proc/self/maps").read_text()))
        if not paths:
            return "not loaded"
        lib = ctypes.CDLL(sorted(paths)[0])
        parts = []
        for prop in (0, 1, 2):  # MAJOR_VERSION, MINOR_VERSION, PATCH_LEVEL
            v = ctypes.c_int()
            if lib.cublasGetProperty(prop, ctypes.byref(v)) != 0:
                return "cublasGetProperty failed"
            parts.append(str(v.value))
        return ".".join(parts) + f" ({sorted(paths)[0]})"
    except Exception as exc:
        return "unknown: " + _short(exc)


def _cuda_driver_version() -> str:
    import ctypes

    try:
        v = ctypes.c_int()
        ctypes.CDLL("libcuda.so.1").cuDriverGetVersion(ctypes.byref(v))
        return f"{v.value // 1000}.{v.value % 1000 // 10}"
    except Exception as exc:
        return "unknown: " + _short(exc)


def collect_env(rt: Rt, args: argparse.Namespace) -> dict[str, Any]:
    torch = rt.torch
    env: dict[str, Any] = {
        "device": rt.device_name,
        "torch": torch.__version__,
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "args": " ".join(sys.argv[1:]),
        "quick": args.quick,
        "reps": rt.reps,
        "torch.version.cuda": torch.version.cuda,
        "torch.version.git": getattr(torch.version, "git_version", ""),
        "cudnn": _try(lambda: torch.backends.cudnn.version()),
        "float32_matmul_precision": _try(torch.get_float32_matmul_precision),
        "matmul.fp32_precision": _try(lambda: torch.backends.cuda.matmul.fp32_precision),
        "matmul.allow_bf16_reduced_precision_reduction": _try(
            lambda: torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction
        ),
        "matmul.allow_fp16_reduced_precision_reduction": _try(
            lambda: torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction
        ),
        "preferred_blas_library": _try(lambda: torch.backends.cuda.preferred_blas_library()),
        "sdp.flash_enabled": _try(torch.backends.cuda.flash_sdp_enabled),
        "sdp.mem_efficient_enabled": _try(torch.backends.cuda.mem_efficient_sdp_enabled),
        "sdp.cudnn_enabled": _try(lambda: torch.backends.cuda.cudnn_sdp_enabled()),
        "sdp.math_enabled": _try(torch.backends.cuda.math_sdp_enabled),
        "cpu_threads": torch.get_num_threads(),
        "l2_bytes_used_for_rotation": rt.l2_bytes,
        "cuda_graphs": rt.graphs,
    }
    for var in sorted(os.environ):
        if var.startswith(("CUDA_", "CUBLAS", "CUDNN", "NVIDIA_TF32", "PYTORCH_", "TORCH_")):
            env["env." + var] = os.environ[var]
    for dist in ("triton", "numpy"):
        env["pkg." + dist] = _try(lambda dist=dist: importlib.metadata.version(dist))
    with contextlib.suppress(Exception):
        for d in importlib.metadata.distributions():
            name = d.metadata["Name"] or ""
            if name.lower().startswith(("nvidia-", "cuda-")):
                env["pkg." + name] = d.version
    if rt.cuda:
        props = torch.cuda.get_device_properties(0)
        for attr in dir(props):
            if not attr.startswith("_"):
                value = getattr(props, attr)
                if not callable(value):
                    env["props." + attr] = str(value)
        env["capability"] = ".".join(map(str, torch.cuda.get_device_capability()))
        env["cuda_driver"] = _cuda_driver_version()
        env["cublas"] = _cublas_version()
        env.update(nvidia_smi())
    return env


def _try(fn: Callable[[], Any]) -> Any:
    try:
        value = fn()
    except Exception as exc:
        return "unavailable: " + _short(exc)[:100]
    return value if isinstance(value, (int, float, bool)) or value is None else str(value)


def write_env(out_dir: Path, env: dict[str, Any], common: dict[str, str]) -> None:
    """Rewrite env.json and env.csv in place (no temporary files: the out dir holds 8 files)."""
    (out_dir / "env.json").write_text(json.dumps(env, indent=1, default=str) + "\n")
    with (out_dir / "env.csv").open("w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=ENV_FIELDS)
        w.writeheader()
        for key, value in _flatten(env):
            w.writerow({"key": key, "value": _cell(value), **common})


def _flatten(d: dict[str, Any], prefix: str = "") -> Iterator[tuple[str, Any]]:
    for key, value in d.items():
        if isinstance(value, dict):
            yield from _flatten(value, f"{prefix}{key}.")
        else:
            yield f"{prefix}{key}", value


_ECHO_KEYS = _cols(
    "variant mode dtype op layout mis_dim backend qkv_layout piece pass m n k time_s tflops gbs"
    " step_s tokens_per_s method inner status"
)


def _echo(table: Table, row: dict[str, Any]) -> None:
    parts = [f"{k}={_cell(row[k])}" for k in _ECHO_KEYS if row.get(k, "") != ""]
    note = row.get("note", "")
    if row.get("status") not in ("ok", None) and note:
        parts.append(f"note={_cell(note)[:160]}")
    print(f"  [{table.path.stem}] " + " ".join(parts), flush=True)


# ----------------------------------------------------------------------------- main

ENV_ECHO = (
    "device",
    "props.multi_processor_count",
    "props.total_memory",
    "props.L2_cache_size",
    "capability",
    "torch",
    "torch.version.cuda",
    "cudnn",
    "cublas",
    "cuda_driver",
    "smi.driver_version",
    "smi.clocks.sm",
    "smi.clocks.max.sm",
    "smi.power.limit",
    "pkg.triton",
)


def _summary_row(fields: list[str]) -> dict[str, Any]:
    """A section's cut/skipped/error row: kind "none" and zero dims, which readers skip."""
    return {"kind": "none", "b": 0, "m": 0, "n": 0, "k": 0} if "kind" in fields else {}


RUNNERS: dict[str, Callable[[Rt, Table, Budget], None]] = {
    "gemm": section_gemm,
    "lmhead": section_lmhead,
    "attention": section_attention,
    "train": section_train,
    "decode": section_decode,
    "residues": section_residues,
    "unfused": section_unfused,
    "decode8b": section_decode8b,
}


def _caps(text: str) -> dict[str, float]:
    """--max-seconds: "90" (every section) or "gemm=30,train=60" (the rest keep defaults)."""
    if "=" not in text:
        return {"*": float(text)}
    caps = {}
    for part in text.split(","):
        name, _, value = part.partition("=")
        if name.strip() not in SECTIONS:
            raise argparse.ArgumentTypeError(f"unknown section {name.strip()!r}")
        caps[name.strip()] = float(value)
    return caps


def main(argv: list[str] | None = None) -> int:
    t_start = time.perf_counter()
    doc = __doc__ or ""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--out-dir", required=True, help="directory for the CSV and env files")
    parser.add_argument("--device", default="cuda", choices=["cuda", "cpu"])
    parser.add_argument("--quick", action="store_true", help="tiny shapes (plumbing check)")
    parser.add_argument("--reps", type=int, default=10, help="timed repetitions per GEMM/SDPA")
    parser.add_argument(
        "--sections",
        default=",".join(DEFAULT_SECTIONS),
        help=f"comma-separated subset of {','.join(SECTIONS)} (default: the first five)",
    )
    parser.add_argument(
        "--max-seconds",
        type=_caps,
        default={},
        help="cap per section in seconds: one number for every section, or e.g. "
        "'gemm=30,train=60' (default: "
        + ", ".join(f"{k}={v:g}" for k, v in BUDGET_S.items())
        + ")",
    )
    parser.add_argument(
        "--total-seconds",
        type=float,
        default=285.0,
        help="sections that would start after this many seconds are skipped (default 285)",
    )
    parser.add_argument("--no-graphs", action="store_true", help="never use CUDA graphs")
    args = parser.parse_args(argv)
    chosen = [s.strip() for s in args.sections.split(",") if s.strip()]
    unknown = sorted(set(chosen) - set(SECTIONS))
    if unknown:
        parser.error(f"unknown sections: {', '.join(unknown)}")
    out_dir = Path(args.out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    warnings.filterwarnings("ignore", message="Failed to initialize NumPy")
    try:
        import torch
    except ImportError:
        print("gpu_validate needs torch (pip install torch)", file=sys.stderr)
        return 2
    print(f"torch {torch.__version__} imported in {time.perf_counter() - t_start:.1f} s")
    if args.device == "cuda" and not torch.cuda.is_available():
        print("no CUDA device; use --device cpu --quick to check the plumbing", file=sys.stderr)
        return 2
    cuda = args.device == "cuda"
    if cuda:
        torch.cuda.init()
        torch.ones(1, device="cuda").sum().item()
        props = torch.cuda.get_device_properties(0)
        device_name = torch.cuda.get_device_name()
        l2 = int(getattr(props, "L2_cache_size", 0) or 50 * 2**20)
    else:
        device_name, l2 = "cpu", 0
        if args.quick:
            torch.set_num_threads(1)  # a plumbing check: leave the other cores alone
    rt = Rt(
        torch=torch,
        device=args.device,
        quick=args.quick,
        reps=args.reps if not args.quick else min(args.reps, 3),
        device_name=device_name,
        l2_bytes=l2,
        graphs=cuda and not args.no_graphs,
    )
    common = {"device": device_name, "torch": torch.__version__}
    try:
        env = collect_env(rt, args)
    except Exception as exc:  # the measurements matter more than their description
        env = {"device": device_name, "torch": torch.__version__, "env_error": _short(exc)}
    env["sections"] = {}
    write_env(out_dir, env, common)
    for key in ENV_ECHO:
        if key in env:
            print(f"  {key}: {env[key]}")
    print(f"device {device_name}; setup done at {time.perf_counter() - t_start:.1f} s", flush=True)
    for name in chosen:
        cap = args.max_seconds.get(name, args.max_seconds.get("*", BUDGET_S[name]))
        left = args.total_seconds - (time.perf_counter() - t_start)
        info: dict[str, Any] = {"cap_s": cap}
        env["sections"][name] = info
        fname, fields = OUT_FILES[name]
        table = Table(out_dir / fname, fields, common)
        if left < 5:
            info.update(status="skipped", elapsed_s=0.0, note="total time budget spent")
            table.row(**_summary_row(fields), status="skipped", note="total time budget spent")
            table.close()
            write_env(out_dir, env, common)
            print(f"== {name}: skipped (total budget spent)", flush=True)
            continue
        budget = Budget(name, min(cap, left))
        print(f"== {name} (cap {budget.limit_s:g} s)", flush=True)
        status, note = "ok", ""
        try:
            torch.manual_seed(0)
            RUNNERS[name](rt, table, budget)
        except Cut as exc:
            status, note = "cut", str(exc)
        except Exception as exc:
            status, note = "error", _short(exc)
            traceback.print_exc()
            info["traceback"] = traceback.format_exc()[-2000:]
        if status == "ok" and budget.cut:
            status, note = "cut", "timed fewer steps than planned (cap reached)"
        if status != "ok":
            table.row(**_summary_row(fields), status=status, note=note)
        table.close()
        with contextlib.suppress(Exception):
            set_tf32(torch, False)
            rt.free()
        info.update(status=status, elapsed_s=round(budget.elapsed, 2), rows=table.rows)
        if note:
            info["note"] = note
        if cuda:
            with contextlib.suppress(Exception):
                info["peak_mem_gb"] = round(torch.cuda.max_memory_allocated() / 2**30, 2)
                torch.cuda.reset_peak_memory_stats()
        write_env(out_dir, env, common)
        print(
            f"== {name}: {status} in {budget.elapsed:.1f} s "
            f"({table.rows} rows; total {time.perf_counter() - t_start:.1f} s)"
            + (f" - {note}" if note else ""),
            flush=True,
        )
    if cuda:
        env.update({k + ".end": v for k, v in nvidia_smi().items()})
    env["total_s"] = round(time.perf_counter() - t_start, 2)
    write_env(out_dir, env, common)
    print(f"done in {env['total_s']:.1f} s; files in {out_dir}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

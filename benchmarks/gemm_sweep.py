"""Time real GEMMs and attention with torch, to validate shapelint's GEMM model.

Usage:
    python benchmarks/gemm_sweep.py --out sweep.csv                  # CUDA GPU, full sweep
    python benchmarks/gemm_sweep.py --device cpu --quick --out s.csv # plumbing check on CPU

The sweep: aligned vs misaligned K and N (multiples of 64, of 8, and odd), small vs large M
(tokens), and scaled-dot-product attention at head dims 64, 80, 96, 128, 132.

CSV columns (one row per timed op):
    kind       "gemm" (torch.matmul of [b,m,k] by [k,n] with the second operand stored as
               [n,k], i.e. X·Wᵀ) or "sdpa" (torch.nn.functional.scaled_dot_product_attention,
               causal, q/k/v of shape [b, heads, seq, head_dim])
    b,m,n,k    GEMM dims (b = batch); for sdpa m = n = seq, k = head_dim, b = batch·heads
    dtype      bf16 | fp16 | fp32
    time_s     median seconds per call over the timed repetitions
    tflops     2·b·m·n·k / time_s / 1e12 (sdpa: 4·b·s²·d·0.5, causal)
    device     the torch device name (torch.cuda.get_device_name or "cpu")
    torch      torch.__version__
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import statistics
import sys
import time
from collections.abc import Callable, Iterator
from typing import Any, TextIO

DTYPES = {"bf16": "bfloat16", "fp16": "float16", "fp32": "float32"}
FIELDS = ["kind", "b", "m", "n", "k", "dtype", "time_s", "tflops", "device", "torch"]


def gemm_shapes(quick: bool) -> Iterator[tuple[int, int, int, int]]:
    """(b, m, n, k): aligned, 16 B-aligned and odd K and N, at small and large M."""
    if quick:
        for m in (8, 64):
            for n, k in ((64, 64), (72, 64), (64, 65)):
                yield 1, m, n, k
        return
    for m in (16, 256, 2048, 8192):
        for base in (4096, 8192):
            for delta in (0, 8, 1):  # multiple of 64, of 8, odd
                yield 1, m, base + delta, 4096
                yield 1, m, 4096, base + delta
    for n in (50257, 50304):  # GPT-2 vocab, unpadded and padded
        yield 1, 8192, n, 768


def sdpa_shapes(quick: bool) -> Iterator[tuple[int, int, int, int]]:
    """(batch, heads, seq, head_dim)."""
    if quick:
        yield 1, 2, 64, 64
        yield 1, 2, 64, 80
        return
    for d in (64, 80, 96, 128, 132):
        yield 4, 32, 2048, d


def _timer(torch: Any, device: str, fn: Callable[[], object], reps: int) -> float:
    for _ in range(3):
        fn()
    times = []
    for _ in range(reps):
        if device == "cuda":
            torch.cuda.synchronize()
        start = time.perf_counter()
        fn()
        if device == "cuda":
            torch.cuda.synchronize()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def _sweep(
    torch: Any, args: argparse.Namespace, dtype: Any, common: dict[str, str], out: TextIO
) -> None:
    writer = csv.DictWriter(out, fieldnames=FIELDS)
    writer.writeheader()
    for b, m, n, k in gemm_shapes(args.quick):
        x = torch.randn(b, m, k, device=args.device, dtype=dtype)
        w = torch.randn(n, k, device=args.device, dtype=dtype)
        t = _timer(torch, args.device, lambda x=x, w=w: torch.matmul(x, w.t()), args.reps)
        tf = 2 * b * m * n * k / t / 1e12
        writer.writerow(
            {"kind": "gemm", "b": b, "m": m, "n": n, "k": k, "time_s": t, "tflops": tf, **common}
        )
    sdpa = torch.nn.functional.scaled_dot_product_attention
    for batch, heads, s, d in sdpa_shapes(args.quick):
        q, kk, v = (
            torch.randn(batch, heads, s, d, device=args.device, dtype=dtype) for _ in range(3)
        )
        t = _timer(
            torch, args.device, lambda q=q, kk=kk, v=v: sdpa(q, kk, v, is_causal=True), args.reps
        )
        tf = 4 * batch * heads * s * s * d * 0.5 / t / 1e12
        writer.writerow(
            {
                "kind": "sdpa",
                "b": batch * heads,
                "m": s,
                "n": s,
                "k": d,
                "time_s": t,
                "tflops": tf,
                **common,
            }
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="-", help="CSV path ('-' for stdout)")
    parser.add_argument("--device", default="cuda", choices=["cuda", "cpu"])
    parser.add_argument("--dtype", default="bf16", choices=list(DTYPES))
    parser.add_argument("--quick", action="store_true", help="tiny sizes (plumbing check)")
    parser.add_argument("--reps", type=int, default=20)
    args = parser.parse_args(argv)
    try:
        import torch
    except ImportError:
        print("gemm_sweep needs torch (pip install torch)", file=sys.stderr)
        return 2
    if args.device == "cuda" and not torch.cuda.is_available():
        print("no CUDA device; use --device cpu --quick to check the plumbing", file=sys.stderr)
        return 2
    dtype = getattr(torch, DTYPES[args.dtype] if args.device == "cuda" else "float32")
    dname = args.dtype if args.device == "cuda" else "fp32"
    device_name = torch.cuda.get_device_name() if args.device == "cuda" else "cpu"
    with contextlib.ExitStack() as stack:
        out: TextIO = sys.stdout
        if args.out != "-":
            out = stack.enter_context(open(args.out, "w", newline="", encoding="utf-8"))
        _sweep(
            torch,
            args,
            dtype,
            {"dtype": dname, "device": device_name, "torch": torch.__version__},
            out,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""``shapelint gemm M N K``: one GEMM as the performance model sees it.

Layouts name how A (M×K) and B (K×N) are stored, row-major, as BLAS's op letters: ``n`` is
the matrix as written (A: K contiguous; B: N contiguous), ``t`` its transpose in memory
(A stored K×M: M contiguous; B stored N×K: K contiguous). ``nt`` is a Linear layer's forward
``X·Wᵀ`` (the default), ``nn`` its dgrad ``dY·W``, ``tn`` its wgrad ``Xᵀ·dY``.
"""

from __future__ import annotations

import argparse
import json
from typing import Any, TextIO

from shapelint.hardware.gpus import GPU
from shapelint.perf.gemm import AContig, BContig, GemmTime, gemm_time

LAYOUTS: dict[str, tuple[AContig, BContig]] = {
    "nn": ("k", "n"),
    "nt": ("k", "k"),
    "tn": ("m", "n"),
    "tt": ("m", "k"),
}


def describe(
    m: int, n: int, k: int, batch: int, layout: str, gpu: GPU, dtype: str
) -> dict[str, Any]:
    """The model's prediction as JSON-ready data."""
    a_contig, b_contig = LAYOUTS[layout]
    t: GemmTime = gemm_time(
        m, n, k, gpu=gpu, dtype=dtype, batch=batch, a_contig=a_contig, b_contig=b_contig
    )
    return {
        "gpu": gpu.name,
        "dtype": dtype,
        "m": m,
        "n": n,
        "k": k,
        "batch": batch,
        "layout": layout,
        **t.report(),
    }


def render(data: dict[str, Any]) -> str:
    """The prediction as a few readable lines."""
    time_us = data["time_s"] * 1e6
    tile = "×".join(map(str, data["tile"]))
    batch = f" × {data['batch']}" if data["batch"] > 1 else ""
    return (
        f"{data['m']}×{data['n']}×{data['k']}{batch} ({data['layout']}) {data['dtype']}"
        f" on {data['gpu']}: {time_us:.3g} µs, {data['tflops']:.1f} TFLOP/s, {data['bound']}-bound"
        f" (intensity {data['intensity']:.0f} FLOP/B, ridge {data['ridge']:.0f})\n"
        f"tile {tile}, split-K {data['split_k']}, {data['tiles']} tiles in {data['waves']}"
        f" wave(s) ({data['wave_efficiency']:.0%} of the SMs busy)\n"
        f"time lost: {data['lost_tiles']:.0%} to tiles, {data['lost_waves']:.0%} to waves,"
        f" {data['lost_alignment']:.0%} to alignment (factor {data['align_factor']:.3g})\n"
        + (f"misaligned: {data['misaligned']}\n" if data.get("misaligned") else "")
    )


def report(args: argparse.Namespace, gpu: GPU, dtype: str, out: TextIO) -> int:
    """Print the prediction for the GEMM in ``args``; ValueError on a bad dimension."""
    from shapelint.core.limits import MAX_DIM
    from shapelint.core.text import one_line

    dims = []
    for name in ("m", "n", "k", "batch"):
        text = getattr(args, name)
        given = one_line(repr(text), 60)
        try:
            value = int(text)
        except ValueError:  # not a number, or more digits than Python converts
            raise ValueError(f"{name.upper()} must be a positive integer, got {given}") from None
        if value <= 0:
            raise ValueError(f"{name.upper()} must be a positive integer, got {given}")
        if value > MAX_DIM:
            raise ValueError(
                f"{name.upper()} must be a positive integer of at most 2³¹ ({MAX_DIM}), got {given}"
            )
        dims.append(value)
    m, n, k, batch = dims
    data = describe(m, n, k, batch, args.layout, gpu, dtype)
    if args.format == "json":
        from shapelint.report.schemas import stamped

        out.write(json.dumps(stamped("gemm", data), indent=2) + "\n")
    else:
        out.write(render(data))
    return 0


def add_parser(sub: Any) -> None:
    """Register ``gemm`` on the subparsers ``sub``."""
    from shapelint.cli.common import DEFAULT_GPU
    from shapelint.cli.flags import dtype_arg

    gemm = sub.add_parser("gemm", help="time one GEMM M×K by K×N as the model sees it")
    gemm.add_argument("m", metavar="M")
    gemm.add_argument("n", metavar="N")
    gemm.add_argument("k", metavar="K")
    gemm.add_argument("--batch", metavar="B", default="1", help="batched GEMMs (default 1)")
    gemm.add_argument(
        "--layout",
        choices=("nn", "nt", "tn", "tt"),
        default="nt",
        help="A, B: n as written, t transposed (default nt: X·Wᵀ)",
    )
    gemm.add_argument("--format", choices=("text", "json"), default="text")
    gemm.add_argument("--gpu", metavar="NAME", help=f"GPU (default {DEFAULT_GPU})")
    gemm.add_argument("--gpu-file", metavar="FILE", help="YAML file with extra GPU entries")
    gemm.add_argument("--dtype", type=dtype_arg, default="bf16", help="bf16|fp16|fp8|tf32|fp32")


def run(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """``shapelint gemm M N K``: one GEMM's predicted time (logic in perf/gemm_command.py)."""
    from shapelint.cli.common import UsageError, _gpus, write_gpu_notes

    (gpu,) = _gpus([args.gpu] if args.gpu else None, args.gpu_file)
    write_gpu_notes([gpu], err)
    try:
        return report(args, gpu, args.dtype, out)
    except ValueError as exc:
        raise UsageError(str(exc)) from None

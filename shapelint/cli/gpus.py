"""``shapelint gpus``: the GPU table."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TextIO

from shapelint.cli.common import UsageError

if TYPE_CHECKING:
    import argparse


def add_parser(sub: Any) -> None:
    """Register ``gpus`` on the subparsers ``sub``."""
    gpus = sub.add_parser("gpus", help="print the GPU table")
    gpus.add_argument("--gpu-file", metavar="FILE")


def run(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """``shapelint gpus``: the GPU table."""
    gpu_file = args.gpu_file
    from shapelint.engine.gpu_file import load_table
    from shapelint.hardware.gpus import GPUTableError

    try:
        table = load_table(gpu_file)
    except GPUTableError as exc:
        raise UsageError(str(exc)) from None
    columns = ("name", "SMs", "16-bit", "fp8", "fp32", "GB/s", "GB", "align", "aliases")
    out.write("{:<16} {:>4} {:>7} {:>7} {:>6} {:>6} {:>5} {:>5}  {}\n".format(*columns))
    for gpu in table:
        peaks = gpu.peak_tflops
        half = peaks.get("bf16") or peaks.get("fp16") or 0.0
        fp8 = f"{peaks['fp8']:.1f}" if peaks.get("fp8") else "-"
        out.write(
            f"{gpu.name:<16} {gpu.sms:>4} {half:>7.1f} {fp8:>7} {peaks.get('fp32', 0.0):>6.1f} "
            f"{gpu.mem_bw_gbs:>6.0f} {gpu.mem_gb:>5.0f} {gpu.best_align_bytes:>5}  "
            f"{', '.join(gpu.aliases)}\n"
        )
    out.write(
        "Dense Tensor Core TFLOP/s (16-bit: bf16, or fp16 where the GPU has no bf16); "
        "sources in shapelint/hardware/gpus.yaml.\n"
    )
    return 0

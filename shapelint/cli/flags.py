"""The flags several commands share: the target (``check``, ``explain``, ``suggest``) and the
settings, output and exit-code flags of ``check``."""

from __future__ import annotations

from typing import TYPE_CHECKING

from shapelint.cli.common import DEFAULT_GPU

if TYPE_CHECKING:
    import argparse


def dtype_arg(text: str) -> str:
    """A dtype name (torch names accepted), or a usage error listing the known ones."""
    import argparse

    from shapelint.core.dtypes import DTYPES, normalize_dtype

    dtype = normalize_dtype(text)
    if dtype is None:
        raise argparse.ArgumentTypeError(
            f"unknown dtype {text!r} (choose from {', '.join(DTYPES)})"
        )
    return dtype


def codes_arg(values: list[str] | None) -> tuple[str, ...]:
    """The rule codes or prefixes of repeated, comma-separated ``--select``/``--ignore``."""
    return tuple(c.strip().upper() for v in values or () for c in v.split(",") if c.strip())


def add_target_flags(p: argparse.ArgumentParser) -> None:
    """Flags shared by ``check`` and ``explain`` that choose the target."""
    from shapelint.cli.argtypes import positive_int as _positive
    from shapelint.cli.engines import add_engine_flags
    from shapelint.cli.step_flags import add_step_flags
    from shapelint.core.model import ATTENTION_KERNELS

    p.add_argument(
        "--gpu",
        action="append",
        metavar="NAME",
        help=f"target GPU (repeatable; default {DEFAULT_GPU})",
    )
    p.add_argument("--gpu-file", metavar="FILE", help="YAML file with extra GPU entries")
    p.add_argument("--dtype", type=dtype_arg, help="bf16|fp16|fp8|tf32|fp32 (torch names accepted)")
    p.add_argument("--tp", type=_positive, metavar="N", help="tensor-parallel size")
    p.add_argument("--micro-batch", type=_positive, metavar="B", help="micro-batch size per GPU")
    p.add_argument("--seq-len", type=_positive, metavar="S", help="sequence length")
    p.add_argument(
        "--mode", choices=("train", "prefill", "decode"), help="what a step is (default train)"
    )
    p.add_argument(
        "--attention",
        choices=ATTENTION_KERNELS,
        help="attention kernel (default flash: FA3 on Hopper, FA2 elsewhere)",
    )
    add_engine_flags(p)
    add_step_flags(p)


def add_output_flags(p: argparse.ArgumentParser) -> None:
    """Flags of ``check`` for settings, output and the exit code."""
    p.add_argument("--config", metavar="FILE", help="settings file to use instead of searching")
    p.add_argument("--statistics", action="store_true", help="count findings per rule")
    p.add_argument("--output-file", metavar="FILE", help="write the report to FILE")
    p.add_argument(
        "--fail-on",
        choices=("error", "warning", "info"),
        help="lowest severity that makes the exit code 1 (default info)",
    )
    p.add_argument(
        "--report-unused-ignores",
        action="store_true",
        help="report `# shapelint: ignore` comments and baseline entries that hide nothing (SL008)",
    )
    p.add_argument("--baseline", metavar="FILE", help="hide the findings recorded in FILE")
    p.add_argument(
        "--write-baseline", metavar="FILE", help="record today's findings in FILE; exit 0"
    )

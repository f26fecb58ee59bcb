"""The target flags that say how a training step is run (``--fused``, ``--data-parallel``,
``--sharded``, ``--recompute``), shared by ``check`` and ``explain``.

They feed the step model's memory-bound ops (`shapelint.perf.ops`): which kernels are fused,
over how many data-parallel GPUs the gradients are reduced, whether the optimizer state is
sharded over them (ZeRO/FSDP), and whether activations are recomputed in the backward.
"""

from __future__ import annotations

import argparse

from shapelint.cli.argtypes import positive_int as _positive


def _fused(text: str) -> str:
    # Imported here: `--version` and commands without --fused load no part of perf.
    from shapelint.perf.fusion import fused_spec

    try:
        return fused_spec(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def add_step_flags(p: argparse.ArgumentParser) -> None:
    """``--fused SPEC``, ``--data-parallel N``, ``--[no-]sharded``, ``--[no-]recompute``."""
    p.add_argument(
        "--fused",
        type=_fused,
        metavar="SPEC",
        help="fused kernels: default (Megatron-LM), none (PyTorch eager), all, or a list such "
        "as default,+cross_entropy or none,norm (norm, swiglu, rope, softmax, dropout, adamw, "
        "cross_entropy)",
    )
    p.add_argument(
        "--data-parallel",
        type=_positive,
        metavar="N",
        help="data-parallel GPUs the gradients are reduced over (default 1)",
    )
    p.add_argument(
        "--sharded",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="optimizer state and gradients sharded over the data-parallel GPUs (ZeRO/FSDP)",
    )
    p.add_argument(
        "--recompute",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="full activation recomputation (checkpointing) in the backward",
    )


__all__ = ["add_step_flags"]

"""Argument types the commands share (argparse ``type=`` callables); each refuses what the
model cannot compute with, so a flag out of range is a usage error naming the flag."""

from __future__ import annotations

import argparse
import math

from shapelint.core.limits import MAX_DIM


def _given(text: str) -> str:
    """What the user typed, cut to a readable length."""
    return repr(text if len(text) <= 40 else text[:40] + "…")


def positive_int(text: str) -> int:
    """A positive integer of at most `MAX_DIM`, or a usage error (argparse names the flag)
    saying what was given."""
    try:
        n = int(text)
    except ValueError:  # not a number, or more digits than Python converts
        raise argparse.ArgumentTypeError(
            f"expected a positive integer, got {_given(text)}"
        ) from None
    if n <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {n}")
    if n > MAX_DIM:
        raise argparse.ArgumentTypeError(
            f"expected a positive integer of at most 2³¹ ({MAX_DIM}), got {_given(text)}"
        )
    return n


def finite_float(text: str) -> float:
    """A finite number (no NaN or infinity, which no comparison can order), or a usage error."""
    try:
        x = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {_given(text)}") from None
    if not math.isfinite(x):
        raise argparse.ArgumentTypeError(f"expected a finite number, got {_given(text)}")
    return x

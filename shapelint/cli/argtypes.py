"""Argument types the commands share (argparse ``type=`` callables, stdlib only)."""

from __future__ import annotations

import argparse


def positive_int(text: str) -> int:
    """A positive integer, or a usage error naming what was given."""
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if n <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {n}")
    return n

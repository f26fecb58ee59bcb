"""Integer helpers every layer shares (dialects' formulas, rules' fixes); imports nothing."""

from __future__ import annotations


def round_up(n: int, multiple: int) -> int:
    """The smallest multiple of ``multiple`` that is >= n."""
    return -(-n // multiple) * multiple


def pow2_factor(n: int) -> int:
    """The largest power of two dividing ``n`` (``n`` > 0)."""
    return n & -n

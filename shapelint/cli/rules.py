"""``shapelint rules``: one line per rule."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TextIO

if TYPE_CHECKING:
    import argparse


def add_parser(sub: Any) -> None:
    """Register ``rules`` on the subparsers ``sub``."""
    sub.add_parser("rules", help="list the rules")


def run(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """``shapelint rules``: one line per rule."""
    from shapelint.rules import REGISTRY, fixable

    for code, module in sorted(REGISTRY.items()):
        rule = module.RULE
        mark = "fix" if fixable(module) else "   "
        out.write(f"{code}  {rule.severity:<7}  {mark}  {rule.name:<30} {rule.summary}\n")
    return 0

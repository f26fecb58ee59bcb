"""``shapelint rule CODE|NAME``: one rule's guideline, why, source and examples."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TextIO

from shapelint.cli.common import UsageError

if TYPE_CHECKING:
    import argparse


def add_parser(sub: Any) -> None:
    """Register ``rule`` on the subparsers ``sub``."""
    rule = sub.add_parser("rule", help="explain one rule")
    rule.add_argument("code", metavar="CODE|NAME")


def run(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """``shapelint rule CODE|NAME``: the guideline, why, source and examples."""
    code = args.code
    from shapelint.rules.codes import closest, find_rule
    from shapelint.rules.render import render_rule

    module = find_rule(code)
    if module is None:
        near = closest(code, prefixes=False)
        hint = f"; did you mean {near!r}?" if near else ""
        raise UsageError(f"unknown rule {code!r} (`shapelint rules` lists them){hint}")
    out.write(render_rule(module, markdown=False))
    return 0

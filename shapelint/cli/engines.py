"""``shapelint engines``: the engines the SL3xx rules know, the versions checked, the codes;
and the argparse action of the ``--engine`` target flag (`shapelint.cli.flags`)."""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from typing import Any, TextIO

from shapelint.hardware.engines import ENGINES, UnknownEngineError, all_default, lookup


class EngineAction(argparse.Action):
    """``--engine NAME[@VERSION]`` (repeatable): appends the canonical name to a tuple."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: str | Sequence[Any] | None,
        option_string: str | None = None,
    ) -> None:
        """Validate one spec and append it (a usage error for an unknown engine)."""
        try:
            name = lookup(str(values)).name
        except UnknownEngineError as exc:
            raise argparse.ArgumentError(self, str(exc)) from None
        current = tuple(getattr(namespace, self.dest, None) or ())
        if name not in current:
            current = (*current, name)
        setattr(namespace, self.dest, current)


def add_parser(sub: Any) -> None:
    """Register ``engines`` on the subparsers ``sub``."""
    engines = sub.add_parser("engines", help="list the engines, versions checked and rule codes")
    engines.add_argument("--format", choices=("text", "json"), default="text")


def run(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """``shapelint engines``: the engine table (``--format text|json``)."""
    return run_engines(args.format, out)


def run_engines(fmt: str, out: TextIO) -> int:
    """Print every engine: name, kind, version checked, where, aliases and SL3xx codes."""
    # Here, not at the top: the ``--engine`` action above is loaded with every command line.
    from shapelint.rules.engine_rules import rules_for

    defaults = set(all_default())
    rows: list[dict[str, Any]] = [
        {
            "name": e.name,
            "title": e.title,
            "kind": e.kind,
            "version": e.version,
            "checked": e.checked,
            "aliases": list(e.aliases),
            "default": e.name in defaults,
            "rules": rules_for(e.name),
        }
        for e in ENGINES
    ]
    if fmt == "json":
        from shapelint.report.schemas import stamped

        out.write(json.dumps(stamped("engines", {"engines": rows}), indent=2) + "\n")
        return 0
    # Columns as wide as their widest entry (engine names and versions vary in length).
    wn = max(len("name"), *(len(r["name"]) for r in rows))
    wv = max(len("version"), *(len(r["version"]) for r in rows))
    wr = max(len("rules"), *(len(", ".join(r["rules"])) for r in rows))
    out.write(f"{'name':<{wn}} {'kind':<6} {'version':<{wv}} {'rules':<{wr}} checked against\n")
    for r in rows:
        mark = "" if r["default"] else " (when named)"
        codes = ", ".join(r["rules"]) or "-"
        out.write(
            f"{r['name']:<{wn}} {r['kind']:<6} {r['version']:<{wv}} {codes:<{wr}} {r['checked']}\n"
        )
        if r["aliases"] or mark:
            aliases = ", ".join(r["aliases"])
            out.write(f"{'':<{wn}} {'':<6} {'':<{wv}} aliases: {aliases or '-'}{mark}\n")
    out.write(
        "Without --engine, a config is checked against the engines it implies (Megatron/NeMo "
        "configs: megatron, and transformer-engine for Megatron-LM unless transformer_impl is "
        "local; quantized checkpoints: the engines serving that format), else "
        "every serve and train engine.\n"
    )
    return 0

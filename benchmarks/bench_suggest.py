"""How fast `shapelint suggest` answers: shapes estimated per second and time to the answer.

Usage::

    python benchmarks/bench_suggest.py [CONFIG] [--gpu G ...] [--repeat N]

CONFIG defaults to the bundled Llama-2-7B config (``examples/llama-2-7b/config.json``). Three
numbers, each the median of ``--repeat`` runs in this process:

- **time to the answer**: ``shapelint suggest CONFIG`` through the CLI's ``main`` (reading,
  parsing, the search, the rule checks and the text report), after a first warm-up run that
  pays the imports;
- **search**: `shapelint.perf.search.search` alone, and the shapes it estimated;
- **shapes/s**: shapes estimated per second of search, and the GEMM cache's hit rate.

A harness, not a test: the issue's target is under 2 s to the answer for a 7B config.
"""

from __future__ import annotations

import argparse
import io
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT = ROOT / "examples" / "llama-2-7b" / "config.json"


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark and print one line per measure."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("config", nargs="?", default=str(DEFAULT))
    parser.add_argument("--gpu", action="append", default=None)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args(argv)
    gpus = args.gpu or ["H100"]

    from shapelint.cli.main import main as cli
    from shapelint.cli.suggest import ffn_follower, load
    from shapelint.engine.target import resolve_target
    from shapelint.perf.search import search
    from shapelint.perf.space import SuggestOptions
    from shapelint.rules.candidates import validator, vocab_padding

    cli_args = ["suggest", args.config, *(x for g in gpus for x in ("--gpu", g))]
    cli(cli_args, io.StringIO(), io.StringIO())  # warm-up: imports, GPU table
    answer = []
    for _ in range(args.repeat):
        start = time.perf_counter()
        code = cli(cli_args, io.StringIO(), io.StringIO())
        answer.append(time.perf_counter() - start)
        if code != 0:
            print(f"shapelint suggest exited {code}", file=sys.stderr)
            return 1

    parsed = cli_parser_args(cli_args)
    loaded = load(parsed)
    targets = [resolve_target(loaded.config, g, loaded.options) for g in loaded.options.gpus]
    searches, shapes = [], 0
    for _ in range(args.repeat):
        start = time.perf_counter()
        result = search(
            loaded.config,
            targets,
            SuggestOptions(),
            valid=validator(loaded.config, targets[0]),
            ffn_of_hidden=ffn_follower(loaded),
            vocab_fix=vocab_padding(loaded.config, targets[0]),
        )
        searches.append(time.perf_counter() - start)
        shapes = result.evaluated
    hit_rate = result.gemm_hits / max(1, result.gemm_hits + result.gemm_misses)

    med_answer, med_search = statistics.median(answer), statistics.median(searches)
    print(f"config: {args.config} on {', '.join(t.gpu.name for t in targets)}")
    print(f"time to the answer (CLI, median of {args.repeat}): {med_answer:.3f} s")
    print(f"search alone (median of {args.repeat}): {med_search:.3f} s, {shapes} shapes estimated")
    print(f"shapes/s: {shapes * len(targets) / med_search:.0f} (shape × GPU estimates per second)")
    print(f"GEMM cache hit rate: {hit_rate:.1%}")
    return 0


def cli_parser_args(argv: list[str]) -> argparse.Namespace:
    """The parsed namespace of ``shapelint`` ARGV, as the CLI builds it."""
    from shapelint.cli.main import build_parser

    return build_parser().parse_args(argv)


if __name__ == "__main__":
    raise SystemExit(main())

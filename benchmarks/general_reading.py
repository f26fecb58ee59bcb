"""How shapelint reads model configs of frameworks nobody tuned it for (issue 23, item 7).

Usage::

    python benchmarks/general_reading.py [--python PY] KEY=DIR [KEY=DIR ...]
    python benchmarks/general_reading.py --list

``KEY`` names a source (``--list`` prints them with their repository and pinned commit) and
``DIR`` is a checkout of that repository at that commit. For every config unit of a source
(a file, a preset, a class, a function's config, a script's size arm) the source's module
under ``benchmarks/general_reading/`` computes the expected dims — hidden, heads, KV heads,
head dim, FFN, vocab, layers, and sequence / micro-batch / experts where the source states
them — with its own reading (``json``, ``yaml``, ``ast``, ``re``) and the framework's own
defaults and formulas, each cited as file:line@commit in that module. A dim it cannot
determine is unknown and does not count. shapelint is never used to produce an expected value.

Then ``PY -m shapelint check --format json --min-slowdown 0 --no-cache`` runs on the files
holding the units (``--python`` picks the install, so a before and an after can be compared),
its configs are paired with the units by file and name, and each unit is:

- found: shapelint produced a config paired with it;
- fully right: every expected-known dim stated and equal;
- unknown: found, some expected dims not stated, none wrong;
- wrong: a dim shapelint states differs from the expected one (each is listed).

A file holding a unit that got neither a config nor an SL009 notice is silent. Unknown is
fine; wrong is not. ``--patterns`` adds a table per pattern of issue 23, ``-v`` every unit
that is not fully right, ``--json FILE`` one record per unit (expected, read, status) so that
two installs can be compared unit by unit.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from general_reading import SOURCES
from general_reading.core import by_pattern, details, measure, records, table


def main(argv: list[str] | None = None) -> int:
    """Measure the given checkouts and print the table, the wrong dims and silent files."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("checkouts", nargs="*", metavar="KEY=DIR")
    parser.add_argument("--python", default=sys.executable, help="the install's python")
    parser.add_argument("--timeout", type=float, default=900, help="seconds per source")
    parser.add_argument("--list", action="store_true", help="list the sources and exit")
    parser.add_argument("--patterns", action="store_true", help="add the table per pattern")
    parser.add_argument("-v", "--verbose", action="store_true", help="list every unit")
    parser.add_argument("--json", type=Path, help="write one record per unit to this file")
    args = parser.parse_args(argv)
    sources = {s.key: s for s in SOURCES}
    if args.list or not args.checkouts:
        for s in SOURCES:
            print(f"{s.key:14} {s.repo:32} {s.commit}  {s.community}; {s.formats}")
        return 0 if args.list else 2
    results = []
    for item in args.checkouts:
        key, sep, directory = item.partition("=")
        if not sep or key not in sources:
            parser.error(f"{item!r}: expected KEY=DIR with KEY one of {', '.join(sources)}")
        root = Path(directory)
        if not root.is_dir():
            parser.error(f"{directory}: not a directory")
        results.append(measure(sources[key], root, args.python, args.timeout))
    print("\n".join(table(results)))
    if args.patterns:
        print()
        print("\n".join(by_pattern(results)))
    print("\n".join(details(results, verbose=args.verbose)))
    if args.json:
        args.json.write_text(json.dumps(records(results), indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

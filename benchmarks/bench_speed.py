"""How fast shapelint is, against the floor of parsing the same files with the same libraries.

Usage (a regular, non-editable install, as pre-commit makes one):

    python -m venv /tmp/sl-bench && /tmp/sl-bench/bin/pip install .
    python benchmarks/bench_speed.py --python /tmp/sl-bench/bin/python [--repeat 7] [--out FILE]

Every case is a pair of commands run as fresh processes, shapelint and its floor, timed by
wall clock. Pairs are interleaved (rep 1 of every case, then rep 2, ...), so a busy machine
slows both sides of a pair alike; the ratio column is the median of the per-repetition ratios
of a pair, with the 25th-75th percentile spread. Python start-up is included on both sides.
The CPU-time ratio (user + system, workers included) is the same comparison, less sensitive
to other load on the machine; several workers spend more CPU than one, for less wall time.

``--compare PY`` runs the start-up and one-file cases with a second install too (``NAME@base``,
in the same interleaved repetitions), so two versions' ratios come from one run.

Cases:
  start        ``shapelint --version`` vs ``python -c pass``
  json/yaml/toml/python
               ``shapelint check FILE`` vs reading and parsing FILE with the library
               shapelint uses (json, yaml.safe_load, tomllib, libcst.parse_module)
  tree-N       ``shapelint check DIR`` on N mixed configs vs a parse-only loop over the same
               files, one worker (``--jobs 1``) and all cores (where ``--jobs`` exists)
  fix-1000     ``shapelint check --fix`` on 1,000 files that need fixes (a fresh copy per rep)
  rerun-1000   an unchanged rerun vs the first run with an empty cache (where a cache exists)
  model        the performance model alone: config x GPU step estimates per second

The trees are generated from the real configs in ``../shared/corpus`` plus the repository's
examples, copied (cycled) into a temporary directory. The JSON file holds every sample.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT.parent / "shared" / "corpus"
KINDS = {".json": "json", ".yaml": "yaml", ".yml": "yaml", ".toml": "toml", ".py": "python"}

FLOOR_ONE = {
    "json": "import json,sys\nwith open(sys.argv[1],'rb') as f: json.loads(f.read())",
    "yaml": "import yaml,sys\nwith open(sys.argv[1],'rb') as f: yaml.safe_load(f.read().decode())",
    "toml": "import tomllib,sys\n"
    "with open(sys.argv[1],'rb') as f: tomllib.loads(f.read().decode())",
    "python": "import libcst,sys\n"
    "with open(sys.argv[1],'rb') as f: libcst.parse_module(f.read().decode())",
}

# Parse-only floor for a tree: walk it, read every file once, parse it with the library
# shapelint uses for its kind (libcst imported only when a Python file is met, as shapelint).
FLOOR_TREE = r"""
import json, os, sys
KINDS = {".json": "json", ".yaml": "yaml", ".yml": "yaml", ".toml": "toml", ".py": "python"}
def parse(kind, text):
    if kind == "json":
        return json.loads(text)
    if kind == "yaml":
        import yaml
        return list(yaml.safe_load_all(text))
    if kind == "toml":
        import tomllib
        return tomllib.loads(text)
    import libcst
    return libcst.parse_module(text)
for root, dirs, files in os.walk(sys.argv[1]):
    dirs.sort()
    for name in sorted(files):
        kind = KINDS.get(os.path.splitext(name)[1].lower())
        if kind is None:
            continue
        with open(os.path.join(root, name), "rb") as fh:
            text = fh.read().decode("utf-8-sig")
        try:
            parse(kind, text)
        except Exception:
            pass
"""

# The performance model alone, in one process: every config of the corpus sample on every
# GPU of the built-in table. Prints estimates and the CPU seconds they took.
MODEL = r"""
import sys, time
from shapelint import dialects
from shapelint.engine.discover import discover
from shapelint.readers import parse
from shapelint.engine.options import LintOptions
from shapelint.engine.target import resolve_target
from shapelint.perf.estimate import step_time
from shapelint.hardware.gpus import load_table
gpus = list(load_table())
configs = []
for src in discover([sys.argv[1]]):
    with open(src.path, "rb") as fh:
        doc = parse(src.path, fh.read(), src.kind)
    if doc.ok:
        configs.extend(dialects.extract(doc))
pairs = []
for c in configs:
    for g in gpus:
        try:
            pairs.append((c, resolve_target(c, g, LintOptions(gpus=(g,)))))
        except Exception:
            pass
done = 0
start = time.process_time()
for c, t in pairs:
    try:
        step_time(c, t)
    except Exception:
        pass
    done += 1
elapsed = time.process_time() - start
print(done, elapsed)
"""


@dataclass
class Case:
    """One benchmark case: shapelint's command and its floor, with their samples."""

    name: str
    what: str
    command: list[str]
    floor: list[str] | None
    floor_what: str = ""
    reps: int = 0
    prepare: object = None  # callable run before each shapelint sample (untimed)
    samples: list[float] = field(default_factory=list)
    floor_samples: list[float] = field(default_factory=list)
    cwd: str | None = None
    cpu: list[float] = field(default_factory=list)
    floor_cpu: list[float] = field(default_factory=list)


def _cpu() -> float:
    """CPU seconds (user + system) of every finished child process so far (0 where unknown)."""
    try:
        import resource
    except ImportError:  # Windows
        return 0.0
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


LAST_CPU = 0.0


def _time(cmd: Sequence[str], cwd: str | None) -> float:
    """Wall-clock seconds of ``cmd``; its CPU seconds (with its workers') go to `LAST_CPU`."""
    global LAST_CPU
    cpu0 = _cpu()
    start = time.perf_counter()
    proc = subprocess.run(
        cmd, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, check=False
    )
    elapsed = time.perf_counter() - start
    LAST_CPU = _cpu() - cpu0
    if proc.returncode not in (0, 1):
        err = proc.stderr.decode(errors="replace").strip().splitlines()[-3:]
        raise SystemExit(f"command failed ({proc.returncode}): {' '.join(cmd)}\n" + "\n".join(err))
    return elapsed


def _sources() -> list[Path]:
    files = [p for p in sorted(CORPUS.rglob("*")) if p.is_file() and p.suffix.lower() in KINDS]
    files += [p for p in sorted((ROOT / "examples").rglob("*")) if p.suffix.lower() in KINDS]
    fix = ROOT / "tests" / "data" / "fix"
    files += [p for p in sorted(fix.iterdir()) if p.suffix in KINDS and ".fixed." not in p.name]
    return files


def make_tree(dest: Path, n: int, sources: Sequence[Path]) -> None:
    """``n`` files cycled from ``sources`` into ``dest``, 100 per directory."""
    for i in range(n):
        src = sources[i % len(sources)]
        sub = dest / f"d{i // 100:03d}"
        sub.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src, sub / f"f{i:05d}_{src.name}")


def make_fix_tree(dest: Path, n: int) -> None:
    """``n`` configs that need fixes: the repository's fix fixtures (JSON, YAML, Python)."""
    fix_dir = ROOT / "tests" / "data" / "fix"
    sources = sorted(p for p in fix_dir.iterdir() if ".fixed." not in p.name)
    make_tree(dest, n, sources)


def pick(kind: str, sources: Sequence[Path]) -> Path:
    """The largest file of ``kind`` among ``sources`` (the most work per start-up)."""
    cands = [p for p in sources if KINDS[p.suffix.lower()] == kind]
    if not cands:
        raise SystemExit(f"no {kind} file to benchmark")
    return max(cands, key=lambda p: p.stat().st_size)


def _help(exe: list[str]) -> str:
    out = subprocess.run([*exe, "check", "--help"], capture_output=True, text=True, check=False)
    return out.stdout


def _pct(xs: Sequence[float], q: float) -> float:
    s = sorted(xs)
    if len(s) == 1:
        return s[0]
    pos = q * (len(s) - 1)
    lo = int(pos)
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (pos - lo)


def summarize(case: Case) -> dict[str, object]:
    """Median and 25-75 % spread of each side and of the paired ratios."""
    out: dict[str, object] = {
        "case": case.name,
        "what": case.what,
        "floor": case.floor_what,
        "median_s": statistics.median(case.samples),
        "p25_s": _pct(case.samples, 0.25),
        "p75_s": _pct(case.samples, 0.75),
        "samples_s": case.samples,
    }
    if case.floor_samples:
        ratios = [a / b for a, b in zip(case.samples, case.floor_samples, strict=False)]
        out.update(
            floor_median_s=statistics.median(case.floor_samples),
            floor_samples_s=case.floor_samples,
            ratio=statistics.median(ratios),
            ratio_p25=_pct(ratios, 0.25),
            ratio_p75=_pct(ratios, 0.75),
        )
    if case.cpu and case.floor_cpu and min(case.floor_cpu) > 0:
        cpu_ratios = [a / b for a, b in zip(case.cpu, case.floor_cpu, strict=False)]
        out.update(
            cpu_median_s=statistics.median(case.cpu),
            floor_cpu_median_s=statistics.median(case.floor_cpu),
            cpu_ratio=statistics.median(cpu_ratios),
            cpu_samples_s=case.cpu,
            floor_cpu_samples_s=case.floor_cpu,
        )
    return out


def _fmt_s(x: float) -> str:
    return f"{x * 1000:.0f} ms" if x < 10 else f"{x:.1f} s"


def table(rows: Sequence[dict[str, object]], extra: Sequence[str]) -> str:
    """The Markdown table of the summaries."""
    lines = [
        "| case | shapelint (median, p25-p75) | floor | floor median | ratio (p25-p75) "
        "| CPU-time ratio |",
        "|---|---|---|---|---|---|",
    ]
    for r in rows:
        me = f"{_fmt_s(r['median_s'])} ({_fmt_s(r['p25_s'])}-{_fmt_s(r['p75_s'])})"  # type: ignore[arg-type]
        if "ratio" in r:
            floor = _fmt_s(r["floor_median_s"])  # type: ignore[arg-type]
            ratio = f"{r['ratio']:.2f}x ({r['ratio_p25']:.2f}-{r['ratio_p75']:.2f})"
        else:
            floor, ratio = "-", "-"
        cpu = f"{r['cpu_ratio']:.2f}x" if "cpu_ratio" in r else "-"
        lines.append(f"| {r['what']} | {me} | {r['floor']} | {floor} | {ratio} | {cpu} |")
    lines.extend(extra)
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the benchmark; print the table; write the JSON file."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--python", default=sys.executable, help="interpreter with shapelint installed")
    ap.add_argument("--repeat", type=int, default=7, help="repetitions of the small cases")
    ap.add_argument(
        "--tree-repeat", type=int, default=3, help="repetitions of the tree and fix cases"
    )
    ap.add_argument(
        "--sizes", default="1000,10000", help="tree sizes, comma-separated (default 1000,10000)"
    )
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="all-cores worker count")
    ap.add_argument("--only", help="comma-separated case-name prefixes to run")
    ap.add_argument("--out", default="bench_speed.json", help="JSON file of every sample")
    ap.add_argument(
        "--compare",
        metavar="PY",
        help="another interpreter with shapelint installed (a baseline): its runs of the "
        "one-file and start-up cases are interleaved with the others as NAME@base",
    )
    args = ap.parse_args(argv)

    py = str(Path(args.python).absolute())
    script = Path(py).parent / "shapelint"
    exe = [str(script)] if script.exists() else [py, "-m", "shapelint"]
    help_text = _help(exe)
    has_jobs = "--jobs" in help_text
    has_cache = "--no-cache" in help_text
    version = subprocess.run(
        [*exe, "--version"], capture_output=True, text=True, check=True
    ).stdout.strip()
    editable = subprocess.run(
        [py, "-c", "import shapelint,sys; print(shapelint.__file__)"],
        cwd=tempfile.gettempdir(),
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    if str(ROOT) in editable:
        print(
            f"note: shapelint is imported from the checkout ({editable}); "
            "an editable install is not what users run",
            file=sys.stderr,
        )

    work = Path(tempfile.mkdtemp(prefix="shapelint-bench-"))
    empty = work / "cwd"  # run from a directory without settings or cache
    empty.mkdir()
    sources = _sources()
    one_worker = ["--jobs", "1"] if has_jobs else []
    no_cache = ["--no-cache"] if has_cache else []
    quiet = ["--exit-zero", "-q"]
    cases: list[Case] = [
        Case(
            "start",
            "start-up (`--version`)",
            [*exe, "--version"],
            [py, "-c", "pass"],
            "`python -c pass`",
            args.repeat,
        )
    ]
    for kind in ("json", "yaml", "toml", "python"):
        f = str(pick(kind, sources))
        cases.append(
            Case(
                kind,
                f"one {kind} config ({Path(f).name}, {Path(f).stat().st_size // 1024} KiB)",
                [*exe, "check", *quiet, *no_cache, f],
                [py, "-c", FLOOR_ONE[kind], f],
                {
                    "json": "json.loads",
                    "yaml": "yaml.safe_load",
                    "toml": "tomllib.loads",
                    "python": "libcst.parse_module",
                }[kind],
                args.repeat,
            )
        )
    for n in (int(s) for s in args.sizes.split(",") if s):
        tree = work / f"tree{n}"
        make_tree(tree, n, sources)
        floor = [py, "-c", FLOOR_TREE, str(tree)]
        cases.append(
            Case(
                f"tree-{n}-1",
                f"{n:,} mixed configs, 1 worker",
                [*exe, "check", *quiet, *no_cache, *one_worker, str(tree)],
                floor,
                "parse-only loop",
                args.tree_repeat,
            )
        )
        if has_jobs:
            cases.append(
                Case(
                    f"tree-{n}-{args.jobs}",
                    f"{n:,} mixed configs, {args.jobs} workers",
                    [*exe, "check", *quiet, *no_cache, "--jobs", str(args.jobs), str(tree)],
                    floor,
                    "parse-only loop",
                    args.tree_repeat,
                )
            )
    fix_src = work / "fix-src"
    make_fix_tree(fix_src, 1000)
    fix_dst = work / "fix"

    def fresh_fix_tree() -> None:
        shutil.rmtree(fix_dst, ignore_errors=True)
        shutil.copytree(fix_src, fix_dst)

    cases.append(
        Case(
            "fix-1000",
            "`--fix` on 1,000 files needing fixes",
            [*exe, "check", *quiet, *no_cache, "--fix", str(fix_dst)],
            [py, "-c", FLOOR_TREE, str(fix_src)],
            "parse-only loop",
            args.tree_repeat,
            prepare=fresh_fix_tree,
        )
    )
    if has_cache:
        tree = work / "tree1000"
        if not tree.exists():
            make_tree(tree, 1000, sources)
        cache_cwd = work / "cache-cwd"
        cache_cwd.mkdir()

        def clear_cache() -> None:
            shutil.rmtree(cache_cwd / ".shapelint_cache", ignore_errors=True)

        first = [*exe, "check", *quiet, str(tree)]
        # Floor here is the first run with an empty cache; the rerun reuses its cache.
        cases.append(
            Case(
                "rerun-1000",
                "unchanged rerun, 1,000 configs (cache)",
                first,
                None,
                "first run (empty cache)",
                args.tree_repeat,
                cwd=str(cache_cwd),
            )
        )
        cases[-1].prepare = ("rerun", clear_cache)
    if args.only:
        prefixes = tuple(args.only.split(","))
        cases = [c for c in cases if c.name.startswith(prefixes)]
    if args.compare:
        # The same commands with the baseline's shapelint; the floor is its own interpreter's.
        base_py = str(Path(args.compare).absolute())
        base_script = Path(base_py).parent / "shapelint"
        base_exe = [str(base_script)] if base_script.exists() else [base_py, "-m", "shapelint"]
        cases += [
            replace(
                c,
                name=f"{c.name}@base",
                what=f"{c.what}, baseline",
                command=[*base_exe, *c.command[len(exe) :]],
                floor=[base_py, *c.floor[1:]],
                samples=[],
                floor_samples=[],
                cpu=[],
                floor_cpu=[],
            )
            for c in list(cases)
            if c.prepare is None
            and c.cwd is None
            and c.floor is not None
            and c.name in ("start", *KINDS.values())
        ]

    model_rates: list[float] = []
    reps = max((c.reps for c in cases), default=0)
    run_model = not args.only or "model".startswith(tuple(args.only.split(",")))
    for rep in range(max(reps, args.repeat if run_model else 0)):
        order = list(cases)
        random.Random(rep).shuffle(order)
        for case in order:
            if rep >= case.reps:
                continue
            cwd = case.cwd or str(empty)
            if isinstance(case.prepare, tuple):  # cache case: first run, then the rerun
                case.prepare[1]()
                case.floor_samples.append(_time(case.command, cwd))
                case.floor_cpu.append(LAST_CPU)
                case.samples.append(_time(case.command, cwd))
                case.cpu.append(LAST_CPU)
                continue
            # Alternate which side runs first, so neither always follows the other.
            sides = [("me", case.command), ("floor", case.floor)]
            if rep % 2:
                sides.reverse()
            for side, cmd in sides:
                if cmd is None:
                    continue
                if side == "me" and callable(case.prepare):
                    case.prepare()
                (case.samples if side == "me" else case.floor_samples).append(_time(cmd, cwd))
                (case.cpu if side == "me" else case.floor_cpu).append(LAST_CPU)
        if run_model:
            out = subprocess.run(
                [py, "-c", MODEL, str(CORPUS)],
                cwd=empty,
                capture_output=True,
                text=True,
                check=True,
            ).stdout.split()
            model_rates.append(int(out[0]) / float(out[1]))
        print(f"rep {rep + 1} done", file=sys.stderr)

    rows = [summarize(c) for c in cases if c.samples]
    extra = []
    if model_rates:
        extra.append(
            f"\nPerformance model alone: {statistics.median(model_rates):,.0f} config x GPU "
            f"step estimates per CPU-second (median of {len(model_rates)}; "
            f"{min(model_rates):,.0f}-{max(model_rates):,.0f})"
        )
    for r in rows:
        if r["case"] == "rerun-1000":
            r["what"] = "unchanged rerun, 1,000 configs (cache)"
    meta = {
        "shapelint": version,
        "python": subprocess.run(
            [py, "-c", "import sys; print(sys.version.split()[0])"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip(),
        "machine": f"{platform.machine()}, {os.cpu_count()} CPUs",
        "load_average_start": os.getloadavg(),
        "jobs_flag": has_jobs,
        "cache": has_cache,
    }
    text = table(rows, extra)
    print(f"{version}, Python {meta['python']}, {meta['machine']}")
    print(text)
    Path(args.out).write_text(
        json.dumps({"meta": meta, "cases": rows, "model_estimates_per_s": model_rates}, indent=1)
        + "\n",
        encoding="utf-8",
    )
    shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""A fuzz campaign through the whole run: hostile-shaped files in a tree, ``shapelint`` on it.

Usage:
    python fuzz/campaign.py --reader python --minutes 10 [--seed N] [--out DIR] [--files 8]

The atheris harnesses (``fuzz_*.py``) call the reader in-process; this campaign runs
``shapelint`` itself, as a user would, so what it finds is what a user would meet: a crash of
the whole process (a segfault in a native parser), a hang, a traceback, an internal error, or
a good config in the same tree that is no longer reported. Each round writes ``--files``
generated inputs of one reader and one known-good config into a fresh directory and runs
``python -m shapelint . --format json --no-cache`` on it (every fourth round with ``--jobs
2``). The inputs are shaped like the inputs that broke shapelint before (issues 12 and 26):
nested f-strings, lambda and unary chains, deep expressions and brackets, long operator
chains, deep JSON/YAML/TOML nesting, containers around each size limit, aliases, long
numbers, deep shell ``$(``/``${``/quote nesting — each with random sizes around the limits,
and a random byte-level mutation of a third of them.

A round fails when the exit code is not 0 or 1, stderr holds a traceback or an internal
error, the JSON report does not parse, the good config lacks its SL101, or the run takes
longer than ``--timeout`` seconds; the round's directory is then kept under ``--out`` with
the command line. At the end one line: rounds, inputs tried, failures, wall time.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

GOOD = '{"n_embd": 768, "n_head": 12, "n_layer": 12, "vocab_size": 50257}\n'
KEYS_PY = "hidden_size = 768\nnum_attention_heads = 12\nnum_hidden_layers = 2\n"
KEYS_JSON = '"hidden_size": 768, "num_attention_heads": 12, "num_hidden_layers": 2'
KEYS_YAML = "hidden_size: 768\nnum_attention_heads: 12\nnum_hidden_layers: 2\n"
KEYS_TOML = "hidden_size = 768\nnum_attention_heads = 12\nnum_hidden_layers = 2\n"
SUFFIX = {"python": ".py", "json": ".json", "yaml": ".yaml", "toml": ".toml", "shell": ".sh"}

Gen = Callable[[random.Random], str]


def around(r: random.Random, *limits: int) -> int:
    """A size near one of ``limits`` (a little under, at, or a little over), or anywhere."""
    if r.random() < 0.2:
        return r.randint(1, max(limits) * 2)
    limit = r.choice(limits)
    return max(1, limit + r.randint(-3, 3))


# -- Python --------------------------------------------------------------------------------------


def py_fstring(r: random.Random) -> str:
    depth = around(r, 200, 1_000, 3_000)
    opener, closer = r.choice([("(", ")"), ("[", "]"), ("{", "}")])
    inner = opener * depth + "1" + closer * depth
    if r.random() < 0.5:  # f-strings inside f-strings
        for _ in range(r.randint(1, 30)):
            inner = "f'{" + inner + "}'" if r.random() < 0.5 else 'f"{' + inner + '}"'
    return KEYS_PY + 'x = f"{' + inner + '}"\n'


def py_chain(r: random.Random) -> str:
    count = around(r, 1_000, 1_999, 2_000, 5_000)
    unit = r.choice(["lambda: ", "not ", "-", "~", "+", "await ", "yield ", "*"])
    lines = r.randint(1, 40)
    return KEYS_PY + "".join(f"x{i} = {unit * count}1\n" for i in range(lines))


def py_binary(r: random.Random) -> str:
    count = around(r, 1_000, 1_999, 2_000)
    op = r.choice([" + ", " * ", " ** ", " and ", " or ", " < ", " if 1 else ", ", ", " | "])
    lines = r.randint(1, 30)
    return KEYS_PY + "".join(f"y{i} = " + op.join(["1"] * count) + "\n" for i in range(lines))


def py_postfix(r: random.Random) -> str:
    count = around(r, 1_000, 1_999, 2_000)
    unit = r.choice([".a", "()", "[0]", "[1:2]", "(x=1)", ".b()"])
    return KEYS_PY + "".join(f"z{i} = a{unit * count}\n" for i in range(r.randint(1, 30)))


def py_brackets(r: random.Random) -> str:
    depth = around(r, 100, 199, 200, 201)
    opener, closer = r.choice([("(", ")"), ("[", "]"), ("{", "}"), ("f(", ")"), ("[", ",]")])
    lines = r.randint(1, 300)
    return KEYS_PY + "".join(
        f"w{i} = " + opener * depth + "1" + closer * depth + "\n" for i in range(lines)
    )


def py_comprehension(r: random.Random) -> str:
    depth = around(r, 50, 100, 199)
    expr = "x"
    for _ in range(depth):
        expr = r.choice(["[{} for x in y]", "({} for x in y)", "{{{} for x in y}}"]).format(expr)
    return KEYS_PY + f"c = {expr}\n"


def py_nesting(r: random.Random) -> str:
    depth = around(r, 99, 100, 101)
    body = "".join(
        " " * i + r.choice(["if x:\n", "for a in b:\n", "with c:\n", "try:\n"])
        for i in range(depth)
    )
    return KEYS_PY + body + " " * depth + "pass\n"


def py_classes(r: random.Random) -> str:
    depth = around(r, 50, 100)
    out = [KEYS_PY]
    for i in range(depth):
        out.append(" " * i + f"class C{i}:\n" + " " * (i + 1) + f"hidden_size = {64 * i}\n")
    return "".join(out)


def py_strings(r: random.Random) -> str:
    parts = around(r, 1_000, 2_000, 10_000)
    quote = r.choice(['"a"', "'b'", 'f"{x}"', 'rb"c"', '"""d"""'])
    return KEYS_PY + "s = " + " ".join([quote] * parts) + "\n"


# -- JSON, YAML, TOML ----------------------------------------------------------------------------


def json_deep(r: random.Random) -> str:
    depth = around(r, 499, 500, 501, 1_000, 100_000)
    opener, closer = r.choice([("[", "]"), ('{"a": ', "}"), ('[{"b": ', "}]")])
    return "{" + KEYS_JSON + ', "x": ' + opener * depth + "1" + closer * depth + "}\n"


def json_wide(r: random.Random) -> str:
    count = around(r, 1_000, 10_000, 100_000)
    if r.random() < 0.5:
        body = ", ".join(f'"k{i}": {i}' for i in range(count))
        return "{" + KEYS_JSON + ", " + body + "}\n"
    return "{" + KEYS_JSON + ', "x": [' + ", ".join(str(i) for i in range(count)) + "]}\n"


def json_values(r: random.Random) -> str:
    value = r.choice(
        [
            "9" * around(r, 4_300, 4_301),
            "1e" + "9" * r.randint(1, 400),
            "-0.0",
            "NaN",
            "Infinity",
            '"' + "\\ud800" * r.randint(1, 1_000) + '"',
            '"' + "x" * r.randint(1, 2_000_000) + '"',
            str(2**63),
            str(-(2**63)),
        ]
    )
    key = r.choice(["hidden_size", "num_attention_heads", "vocab_size", "num_hidden_layers"])
    return '{"n_embd": 768, "n_head": 12, "' + key + '": ' + value + "}\n"


def yaml_deep(r: random.Random) -> str:
    depth = around(r, 199, 200, 201, 10_000)
    if r.random() < 0.5:
        return KEYS_YAML + "x: " + "[" * depth + "]" * depth + "\n"
    return KEYS_YAML + "".join(" " * i + f"k{i}:\n" for i in range(depth)) + " " * depth + "v\n"


def yaml_aliases(r: random.Random) -> str:
    width = r.randint(2, 12)
    levels = r.randint(1, 12)
    out = [KEYS_YAML, "a0: &a0 [" + ", ".join(["x"] * width) + "]\n"]
    for i in range(1, levels):
        out.append(f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * width) + "]\n")
    if r.random() < 0.3:
        out.append("self: &s [1, *s]\n")
    return "".join(out)


def yaml_wide(r: random.Random) -> str:
    count = around(r, 1_000, 10_000, 100_000)
    return KEYS_YAML + "".join(f"k{i}: {i}\n" for i in range(count))


def yaml_values(r: random.Random) -> str:
    value = r.choice(
        [
            "7" * around(r, 4_300, 4_301),
            ".nan",
            ".inf",
            "-.inf",
            "0x" + "f" * 5_000,
            "!!python/object/apply:os.system ['true']",
            "!custom 3",
            "1_000_000",
            "0o777",
            "1:20:30",
            "2001-12-14t21:59:43.10-05:00",
            "'" + "x" * 100_000 + "'",
        ]
    )
    return "hidden_size: " + value + "\nnum_attention_heads: 12\nnum_hidden_layers: 2\n"


def toml_deep(r: random.Random) -> str:
    depth = around(r, 99, 100, 200, 10_000)
    if r.random() < 0.5:
        return KEYS_TOML + "x = " + "[" * depth + "]" * depth + "\n"
    return KEYS_TOML + "x = " + "{a = " * depth + "1" + "}" * depth + "\n"


def toml_wide(r: random.Random) -> str:
    count = around(r, 1_000, 10_000, 50_000)
    if r.random() < 0.5:
        return KEYS_TOML + "".join(f"[t{i}]\nv = {i}\n" for i in range(count))
    return KEYS_TOML + "x." + ".".join(f"k{i}" for i in range(min(count, 5_000))) + " = 1\n"


def toml_values(r: random.Random) -> str:
    value = r.choice(
        [
            "7" * around(r, 4_300, 4_301),
            "nan",
            "inf",
            "-inf",
            "0x" + "f" * 5_000,
            '"""' + "x" * 100_000 + '"""',
            "1979-05-27T07:32:00Z",
            "1e400",
        ]
    )
    return "hidden_size = " + value + "\nnum_attention_heads = 12\nnum_hidden_layers = 2\n"


# -- shell ---------------------------------------------------------------------------------------

FLAGS = "--hidden-size 768 --num-attention-heads 12 --num-layers 2 --vocab-size 50257"


def sh_nesting(r: random.Random) -> str:
    depth = around(r, 63, 64, 65, 70, 10_000)
    opener, closer = r.choice(
        [
            ("$(echo ", ")"),
            ("${X:-", "}"),
            ('"$(echo "', '")'),
            ("$((1+", "))"),
            ("'", "'"),
            ("`", "`"),
        ]
    )
    return "#!/bin/bash\nX=" + opener * depth + "a" + closer * depth + f"\ntorchrun p.py {FLAGS}\n"


def sh_long(r: random.Random) -> str:
    count = around(r, 1_000, 10_000, 100_000)
    kind = r.random()
    if kind < 0.3:
        body = "".join(f"--flag-{i} {i} \\\n" for i in range(count))
        return f"#!/bin/bash\ntorchrun p.py {body}{FLAGS}\n"
    if kind < 0.6:
        return (
            "#!/bin/bash\n"
            + "".join(f"V{i}=$V{i - 1}\n" for i in range(1, count))
            + (f"torchrun p.py --hidden-size $V{count - 1} {FLAGS}\n")
        )
    return (
        "#!/bin/bash\nARGS=(\n"
        + "".join(f"  --k{i} {i}\n" for i in range(count))
        + (f')\ntorchrun p.py "${{ARGS[@]}}" {FLAGS}\n')
    )


def sh_structure(r: random.Random) -> str:
    depth = around(r, 50, 100, 1_000)
    opener = r.choice(["if true; then\n", "for i in 1; do\n", "case x in\nx)\n", "{\n", "(\n"])
    closer = {
        "if true; then\n": "fi\n",
        "for i in 1; do\n": "done\n",
        "case x in\nx)\n": ";;\nesac\n",
        "{\n": "}\n",
        "(\n": ")\n",
    }[opener]
    return "#!/bin/bash\n" + opener * depth + f"torchrun p.py {FLAGS}\n" + closer * depth


GENERATORS: dict[str, list[Gen]] = {
    "python": [
        py_fstring,
        py_chain,
        py_binary,
        py_postfix,
        py_brackets,
        py_comprehension,
        py_nesting,
        py_classes,
        py_strings,
    ],
    "json": [json_deep, json_wide, json_values],
    "yaml": [yaml_deep, yaml_aliases, yaml_wide, yaml_values],
    "toml": [toml_deep, toml_wide, toml_values],
    "shell": [sh_nesting, sh_long, sh_structure],
}


def mutate(r: random.Random, data: bytes) -> bytes:
    """A few random byte-level edits: flips, inserted or deleted runs, a duplicated slice."""
    out = bytearray(data)
    for _ in range(r.randint(1, 8)):
        if not out:
            break
        at = r.randrange(len(out))
        kind = r.random()
        if kind < 0.3:
            out[at] ^= 1 << r.randrange(8)
        elif kind < 0.55:
            out[at:at] = bytes(
                r.choice(b"()[]{}\"'$`\\:,\n #\x00\xff") for _ in range(r.randint(1, 8))
            )
        elif kind < 0.8:
            del out[at : at + r.randint(1, 64)]
        else:
            end = min(len(out), at + r.randint(1, 4096))
            out[at:at] = out[at:end]
    return bytes(out)


# -- the campaign --------------------------------------------------------------------------------


def one_round(
    r: random.Random, reader: str, files: int, root: Path, timeout: float, jobs: str
) -> tuple[int, str | None]:
    """Write a tree and lint it; (inputs written, why the round failed or None)."""
    root.mkdir(parents=True)
    (root / "good").mkdir()
    (root / "good" / "config.json").write_text(GOOD)
    log = []
    for i in range(files):
        gen = r.choice(GENERATORS[reader])
        data = gen(r).encode("utf-8", "surrogatepass")
        mutated = r.random() < 0.33
        if mutated:
            data = mutate(r, data)
        name = f"f{i:02d}_{gen.__name__}{SUFFIX[reader]}"
        (root / name).write_bytes(data)
        log.append(f"{name}: {gen.__name__}, {len(data)} bytes{', mutated' if mutated else ''}")
    argv = [sys.executable, "-m", "shapelint", ".", "--format", "json", "--no-cache"]
    argv += ["--jobs", jobs]
    (root / "CAMPAIGN.txt").write_text(" ".join(argv) + "\n" + "\n".join(log) + "\n")
    try:
        proc = subprocess.run(argv, cwd=root, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return files, f"ran past {timeout:g} s"
    if proc.returncode not in (0, 1):
        return files, f"exit code {proc.returncode}: {proc.stderr[-300:]!r}"
    if "Traceback" in proc.stderr or "internal error" in proc.stderr:
        return files, f"stderr: {proc.stderr[-300:]!r}"
    try:
        report = json.loads(proc.stdout)
    except ValueError:
        return files, f"report is not JSON: {proc.stdout[-300:]!r}"
    good = [
        f["code"] for f in report["findings"] if f["path"] == os.path.join("good", "config.json")
    ]
    if good != ["SL101"]:
        return files, f"the good config got {good}"
    return files, None


def main() -> None:
    """Run rounds of one reader for ``--minutes`` and print the tally."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reader", choices=sorted(GENERATORS), required=True)
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--files", type=int, default=8, help="generated inputs per round")
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds per round")
    parser.add_argument("--out", default="fuzz-campaign", help="where failing rounds are kept")
    args = parser.parse_args()
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(2**32)
    r = random.Random(seed)
    out = Path(args.out)
    start = time.monotonic()
    rounds = inputs = failures = 0
    with tempfile.TemporaryDirectory() as tmp:
        while time.monotonic() - start < args.minutes * 60:
            root = Path(tmp) / f"round{rounds:05d}"
            jobs = "2" if rounds % 4 == 3 else "1"
            tried, failed = one_round(r, args.reader, args.files, root, args.timeout, jobs)
            rounds += 1
            inputs += tried
            if failed is not None:
                failures += 1
                kept = out / f"{args.reader}-{seed}-{rounds:05d}"
                shutil.copytree(root, kept, symlinks=True, dirs_exist_ok=True)
                print(f"round {rounds}: {failed} (kept in {kept})", flush=True)
            shutil.rmtree(root, ignore_errors=True)
    wall = time.monotonic() - start
    print(
        f"{args.reader}: seed {seed}, {rounds} rounds, {inputs} inputs, {failures} failed "
        f"rounds, {wall:.0f} s wall",
        flush=True,
    )
    raise SystemExit(1 if failures else 0)


if __name__ == "__main__":
    main()

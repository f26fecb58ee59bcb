"""How shapelint reads Megatron-LM launch scripts, against an independent reading.

Usage: ``python benchmarks/shell_coverage.py DIR`` (e.g. a checkout of Megatron-LM's
``examples/``). For every ``*.sh`` under DIR that passes ``--hidden-size``,
``--num-layers`` or ``--num-attention-heads``, the truth is read here with `shlex` (a
script's ``VAR=value`` and ``VAR=${VAR:-value}`` assignments substituted into ``$VAR`` /
``${VAR}``; a flag set to two different values, or to anything still holding ``$``, is left
out) and compared with shapelint's config for the flags it states: hidden, heads, layers,
FFN, sequence, tensor parallel, micro-batch, and KV heads under ``--group-query-attention``.
Prints the counts (scripts, read, fully right, partly unknown, wrong) and each difference.
"""

from __future__ import annotations

import re
import shlex
import sys
from pathlib import Path

from shapelint.core.model import Dim
from shapelint.dialects import extract
from shapelint.readers import parse

FLAGS = {
    "--hidden-size": Dim.HIDDEN,
    "--num-attention-heads": Dim.HEADS,
    "--num-layers": Dim.LAYERS,
    "--ffn-hidden-size": Dim.FFN,
    "--seq-length": Dim.SEQ_LEN,
    "--tensor-model-parallel-size": Dim.TP,
    "--micro-batch-size": Dim.MICRO_BATCH,
}
SHAPE = ("--hidden-size", "--num-layers", "--num-attention-heads")
ASSIGN = re.compile(r"^\s*(?:export\s+)?([A-Za-z_]\w*)=(\S+)\s*$")


def truth(text: str) -> dict[Dim, int] | None:
    """The stated flags as ints, or None when the script passes no shape flag."""
    env: dict[str, str] = {}
    for line in text.splitlines():
        m = ASSIGN.match(line.split("#")[0]) if "=(" not in line else None
        if m:
            value = m.group(2).strip("\"'")
            d = re.fullmatch(r"\$\{(\w+):-([^}$]+)\}", value)
            env[m.group(1)] = d.group(2) if d else value
    joined = text.replace("\\\n", " ")
    try:
        words = shlex.split(joined, comments=True)
    except ValueError:
        return None
    seen: dict[str, set[str]] = {}
    for i, w in enumerate(words):
        name, eq, inline = w.partition("=")
        if not name.startswith("--"):
            continue
        value = inline if eq else (words[i + 1] if i + 1 < len(words) else "")
        value = re.sub(r"\$\{?(\w+)\}?", lambda m: env.get(m.group(1), m.group(0)), value)
        seen.setdefault(name, set()).add(value)
    if not any(f in seen for f in SHAPE):
        return None
    out: dict[Dim, int] = {}
    flags = dict(FLAGS)
    if "--group-query-attention" in seen:
        flags["--num-query-groups"] = Dim.KV_HEADS
    for flag, dim in flags.items():
        values = seen.get(flag, set())
        if len(values) == 1 and (v := next(iter(values))).isdigit():
            out[dim] = int(v)
    return out


def main(root: Path) -> int:
    scripts = read = right = unknown = wrong = 0
    details = []
    for path in sorted(root.rglob("*.sh")):
        text = path.read_text(errors="replace")
        want = truth(text)
        if want is None:
            continue
        scripts += 1
        configs = [c for c in extract(parse(str(path), text.encode(), "shell"))]
        if not configs:
            details.append(f"not read: {path}")
            continue
        read += 1
        got = {d: configs[0].int(d) for d in want}
        bad = {d: (w, got[d]) for d, w in want.items() if got[d] is not None and got[d] != w}
        missing = [d for d in want if got[d] is None]
        if bad:
            wrong += 1
            details.append(f"wrong: {path}: {bad}")
        elif missing:
            unknown += 1
            details.append(f"unknown: {path}: {[d.value for d in missing]}")
        else:
            right += 1
    counts = f"scripts {scripts}, read {read}, fully right {right}, "
    print(counts + f"partly unknown {unknown}, wrong {wrong}")
    for line in details:
        print("  " + line)
    return 1 if wrong else 0


if __name__ == "__main__":
    raise SystemExit(main(Path(sys.argv[1])))

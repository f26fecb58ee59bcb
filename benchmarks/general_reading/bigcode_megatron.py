"""bigcode-project/Megatron-LM: a Megatron fork's launch scripts (``--attention-head-type``).

Units (bigcode-project/Megatron-LM at 7c325cd3):

- every ``.sh`` / ``.slurm`` script under examples/, tests/functional_tests/ and tools/ that
  states ``--num-layers``, ``--hidden-size`` and ``--num-attention-heads`` (values through
  the script's variables, see :mod:`shell`);
- each ``if [ ${MODEL_SIZE} == ... ]`` arm of examples/sc21/run_table_1.sh and each
  examples/sc21/run_figure_*.sh: variables (``NLS``, ``HS``, ``NAH``, ``MBS``) that the sourced
  CONFIG.sh turns into flags (CONFIG.sh:30-36).

Dims, with the fork's own rules (megatron/arguments.py): FFN ``--ffn-hidden-size``, else
``4 · hidden`` (lines 278-279), with ``--swiglu`` ``int(4 · hidden · 2/3 / 64) · 64``
(line 287); head dim ``--kv-channels``, else ``hidden // heads`` (lines 291-293); KV heads 1
under ``--attention-head-type multiquery`` (one key/value projection shared by all heads,
megatron/model/transformer.py:627-641), else the heads; the sequence ``--seq-length`` (an
encoder-decoder's ``--encoder-seq-length`` alone is left unknown); the micro-batch
``--micro-batch-size`` (``--batch-size`` is refused, arguments.py:124). The vocabulary is the
tokenizer's, padded (megatron/tokenizer/tokenizer.py:67): unknown.
"""

from __future__ import annotations

import re
from pathlib import Path

from .core import Source, Unit
from .shell import clean, expand, has_flag, int_flag, variables

DIRS = ("examples", "tests/functional_tests", "tools")
SC21 = "examples/sc21"


def megatron_dims(
    text: str, env: dict[str, str | None], values: dict[str, int | None] | None = None
) -> dict[str, int | None]:
    """The expected dims of one Megatron command line (``values`` override flags)."""
    v = values or {}

    def get(name: str) -> int | None:
        return v[name] if name in v else int_flag(text, name, env)

    hidden, heads = get("--hidden-size"), get("--num-attention-heads")
    if has_flag(text, "--ffn-hidden-size"):
        ffn = get("--ffn-hidden-size")
    else:
        ffn = 4 * hidden if hidden else None
    if has_flag(text, "--swiglu") and hidden:
        ffn = int((4 * hidden * 2 / 3) / 64) * 64
    if has_flag(text, "--kv-channels"):
        head_dim = get("--kv-channels")
    else:
        head_dim = hidden // heads if hidden and heads else None
    kind = re.search(r"--attention-head-type[ \t=]+[\"']?(\w+)", text)
    kv = 1 if kind and kind.group(1) == "multiquery" else heads
    return {
        "hidden": hidden,
        "heads": heads,
        "kv_heads": kv,
        "head_dim": head_dim,
        "ffn": ffn,
        "layers": get("--num-layers"),
        "seq_len": get("--seq-length"),
        "micro_batch": get("--micro-batch-size"),
    }


def script_units(root: Path) -> list[Unit]:
    """Scripts stating the model on their command line."""
    out: list[Unit] = []
    files = sorted(
        p
        for d in DIRS
        for p in (root / d).rglob("*")
        if p.suffix in (".sh", ".slurm") and SC21 not in str(p.relative_to(root))
    )
    for path in files:
        raw = path.read_text(errors="replace")
        text = clean(raw)
        if not all(has_flag(text, f) for f in ("--num-layers", "--hidden-size")):
            continue
        env = variables(text)
        exp = megatron_dims(text, env)
        if exp["hidden"] is None and exp["layers"] is None:
            continue
        line = next((i + 1 for i, t in enumerate(raw.splitlines()) if "--num-layers" in t), 1)
        pats = ["plain"]
        if "multiquery" in text:
            pats = ["fork"]
        out.append(
            Unit(
                path=str(path.relative_to(root)),
                names=(path.stem,),
                line=line,
                expected=exp,
                patterns=tuple(pats),
                batch_stated=has_flag(text, "--micro-batch-size")
                or has_flag(text, "--global-batch-size"),
            )
        )
    return out


_ARM = re.compile(r'(?:if|elif)\s+\[\s+\$\{?MODEL_SIZE\}?\s+==\s+"([^"]+)"\s+\];\s*then')


def sc21_units(root: Path) -> list[Unit]:
    """The size arms of run_table_1.sh and the run_figure_*.sh scripts."""
    config = clean((root / SC21 / "CONFIG.sh").read_text())
    out: list[Unit] = []
    for path in sorted((root / SC21).glob("run_*.sh")):
        raw = path.read_text()
        text = clean(raw)
        arms = list(_ARM.finditer(text))
        if arms:
            bodies = [
                (m.group(1), text[m.end() : arms[i + 1].start() if i + 1 < len(arms) else None])
                for i, m in enumerate(arms)
            ]
            pats = ("main-or-if",)
        else:
            bodies = [(path.stem, text)]
            pats = ("plain",)
        for name, body in bodies:
            if arms:
                body = body.split("\nfi", 1)[0]
            env = variables(body)

            def num(var: str, env: dict[str, str | None] = env) -> int | None:
                value = expand(f"${{{var}}}", env)
                return int(value) if value and value.isdigit() else None

            values = {
                "--num-layers": num("NLS"),
                "--hidden-size": num("HS"),
                "--num-attention-heads": num("NAH"),
                "--micro-batch-size": num("MBS"),
                "--seq-length": None,  # in the sourced CONFIG.sh, not this file
            }
            exp = megatron_dims(config, {}, values)
            key = f'"{name}"' if arms else "HS="
            line = next((i + 1 for i, t in enumerate(raw.splitlines()) if key in t), 1)
            out.append(
                Unit(
                    path=str(path.relative_to(root)),
                    names=(name, path.stem),
                    line=line,
                    expected=exp,
                    patterns=pats,
                    batch_stated=True,
                )
            )
    return out


def units(root: Path) -> list[Unit]:
    """All script units."""
    return script_units(root) + sc21_units(root)


SOURCE = Source(
    key="bigcode",
    repo="bigcode-project/Megatron-LM",
    commit="7c325cd34a109880a3fc03432e8b3e4576b22701",
    community="Megatron fork",
    formats="shell",
    collect=units,
)

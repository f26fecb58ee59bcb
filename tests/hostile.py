"""Build a directory that holds every bad input of the hostile-input catalogue (issue 12).

Shared by ``tests/test_hostile.py`` and ``benchmarks/hostile_tree.py``. Each entry of
`build` says what shapelint must do with the file when the directory is walked.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

# A real config with a known finding: vocab 50257 is not a multiple of 64 (SL101).
GPT2 = '{\n  "n_embd": 768,\n  "n_head": 12,\n  "n_layer": 12,\n  "vocab_size": 50257\n}\n'
GPT2_PY = "n_embd = 768\nn_head = 12\nn_layer = 12\nvocab_size = 50257\n"
# Two model-shape keys: enough for a file that fails to parse to be reported, not skipped.
KEYS = "hidden_size = 768\nnum_attention_heads = 12\n"
YAML_KEYS = "hidden_size: 768\nnum_attention_heads: 12\n"
SIDE_EFFECT_MARKER = "side-effect-ran.txt"
# A dataclass config, for a Python file whose base class is read from another file.
GPT2_CLASS = (
    "from dataclasses import dataclass\n\nfrom .base import Base\n\n\n@dataclass\n"
    "class GPT(Base):\n    n_embd: int = 768\n    n_head: int = 12\n    n_layer: int = 12\n"
    "    vocab_size: int = 50257\n"
)


# Inputs that crash or exhaust libcst's native parser and pass every pre-check (issue 26).
def fstring_bomb(depth: int = 3_000) -> str:
    """An f-string whose replacement field nests ``depth`` brackets (tokenize sees one
    string token on Python 3.11; libcst segfaults)."""
    return 'x = f"{' + "(" * depth + "1" + ")" * depth + '}"\n'


def lambda_chain(count: int = 5_000) -> str:
    """``count`` chained ``lambda:`` (40 KB; libcst segfaults or takes gigabytes)."""
    return "x = " + "lambda: " * count + "1\n"


def many_keys(base: str, count: int) -> str:
    """The JSON object ``base`` with ``count`` more top-level keys after its own."""
    extra = "".join(f', "extra_{i}": {i}' for i in range(count))
    return base.rstrip().rstrip("}").rstrip() + extra + "}\n"


def deep_subshell(depth: int = 70) -> str:
    """A launch script whose ``$(`` nests ``depth`` deep before its ``torchrun`` line (SL101:
    the vocab padded to 1 is not a multiple of 64)."""
    return (
        "#!/bin/bash\nX=" + "$(echo " * depth + "a" + ")" * depth + "\n"
        "torchrun pretrain_gpt.py --hidden-size 768 --num-attention-heads 12 --num-layers 12 "
        "--vocab-size 50257 --make-vocab-size-divisible-by 1\n"
    )


def not_chains(lines: int = 40, count: int = 1_900) -> str:
    """``lines`` chains of ``count`` ``not`` (150 KB, every limit of the pre-check kept;
    libcst takes more than 3 GB and 20 s)."""
    return "".join("x = " + "not " * count + "1\n" for _ in range(lines))


def build(root: Path, marker_dir: Path) -> dict[str, str]:
    """Write the catalogue under ``root``; returns {relative path: expected outcome}.

    Outcomes: ``good`` (linted, SL101 on the vocab), ``SL000`` (one finding naming the
    file), ``SL006``/``SL007`` (the YAML safety findings), ``skipped`` (found by the walk, not a
    config: not reported), ``clean`` (read, nothing to report).
    """
    root.mkdir(parents=True, exist_ok=True)
    expect: dict[str, str] = {}

    def put(rel: str, data: bytes | str, outcome: str) -> Path:
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data.encode("utf-8") if isinstance(data, str) else data)
        expect[rel] = outcome
        return path

    deep = 100_000
    put("good/config.json", GPT2, "good")
    put("good_utf16/config.json", GPT2.encode("utf-16"), "good")
    put("good_cr/config.json", GPT2.replace("\n", "\r"), "good")
    put("good_py/model.py", GPT2_PY, "good")
    put("dir with space/конфиг ü.json", GPT2, "good")
    put("-leading-dash.json", GPT2, "good")
    put("config.json/inner.json", GPT2, "good")  # a directory named config.json
    put("empty.json", "", "skipped")
    put("blank.yaml", "  \n\n", "clean")  # an empty YAML stream is valid
    put("blank/config.json", " \n \n", "SL000")  # named like a config: reported
    put("binary.json", bytes(range(256)) * 4, "skipped")
    put("bad_utf8/config.json", b'{\n  "n_embd": 768,\n  "name": "\xff"\n}\n', "SL000")
    put("deep/config.json", "[" * deep + "]" * deep, "SL000")
    put("deep.yaml", YAML_KEYS + "x: " + "[" * deep + "]" * deep + "\n", "SL000")
    put("deep.toml", KEYS + "x = " + "[" * deep + "]" * deep + "\n", "SL000")
    put("deep_paren.py", KEYS + "x = " + "(" * 10_000 + "1" + ")" * 10_000 + "\n", "SL000")
    put("long_expr.py", KEYS + "x = " + " + ".join(["1"] * deep) + "\n", "SL000")
    put(
        "many_assign.py",
        KEYS + "".join(f"x{i} = {i}\n" for i in range(deep)),
        "SL000",
    )
    put("huge_int/config.json", '{"hidden_size": ' + "7" * 10_000 + "}", "SL000")
    put(
        "huge_float/config.json",
        '{"hidden_size": 1e400, "num_attention_heads": NaN, "vocab_size": Infinity}',
        "SL002",
    )
    put(
        "huge.yaml",
        "hidden_size: " + "7" * 10_000 + "\nnum_attention_heads: .nan\nvocab_size: .inf\n",
        "SL000",
    )
    put("huge.toml", "num_attention_heads = 12\nhidden_size = " + "7" * 10_000 + "\n", "SL000")
    # An int too long to write in decimal (16,000 bits): the JSON report writes it in hex.
    put("hex_int.yaml", "hidden_size: 0x" + "f" * 4_000 + "\nnum_attention_heads: 12\n", "SL002")
    put("py2.py", 'print "hello"\nexec "x = 1"\n', "skipped")
    put("syntax/config.py", KEYS + "vocab_size = (\n", "SL000")
    put(
        "side_effects.py",
        f"import os\nopen({str(marker_dir / SIDE_EFFECT_MARKER)!r}, 'w').write('ran')\n"
        "os.system('echo pwned')\nhidden_size = 4096\n",
        "clean",
    )
    laughs = "a: &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join(['*' + chr(97 + i)] * 10)}]\n" for i in range(8)
    )
    put("laughs.yaml", "hidden_size: 1\n" + laughs, "SL007")
    put("recursive.yaml", "hidden_size: 1\nx: &a [1, *a]\n", "SL007")
    put("unsafe.yaml", "hidden_size: !!python/object/apply:os.system ['echo pwned']\n", "SL006")
    put("multi.yaml", "hidden_size: 768\n---\nhidden_size: 1024\n---\n- 1\n", "clean")
    put(".vscode/settings.json", '{\n  // comment\n  "editor.tabSize": 2,\n}\n', "skipped")
    put("templates/deployment.yaml", "metadata:\n  name: {{ .Release.Name }}\n", "skipped")
    # Issue 26: native parser crashes and memory (failures 6 and 7), in a file and in a base
    # class read for inheritance (the file that imports it is still linted).
    put("fstring_bomb.py", KEYS + fstring_bomb(), "SL000")
    put("lambda_chain.py", KEYS + lambda_chain(), "SL000")
    put("not_chains.py", KEYS + not_chains(), "SL000")
    put("inherit_bomb/base.py", KEYS + fstring_bomb() + "class Base:\n    pass\n", "SL000")
    put("inherit_bomb/model.py", GPT2_CLASS, "good")
    # Issue 26, failure 20: large but legal files are read, never passed unread.
    put("many_keys/config.json", many_keys(GPT2, 1_200), "good")
    put("deep_subshell.sh", deep_subshell(), "SL101")
    put("huge_vocab.json", many_keys('{"a": 0}', 12_000), "skipped")
    put("big/config.json", GPT2[:-2] + ', "pad": "' + "x" * (3 * 1024 * 1024) + '"}', "SL000")
    (root / ".shapelint.toml").write_text('max-file-size-mb = 2\nselect = ["SL0", "SL101"]\n')

    # Links: a loop, a link out of the tree, a dangling link.
    os.symlink("..", root / "good" / "loop")
    outside = marker_dir / "outside.json"
    outside.write_text(GPT2)
    os.symlink(outside, root / "linked_out.json")
    expect["linked_out.json"] = "good"
    os.symlink("does-not-exist.json", root / "dangling.json")
    expect["dangling.json"] = "SL000"
    # Not regular files: a FIFO and a character device (through a link: no mknod needed).
    os.mkfifo(root / "fifo.json")
    expect["fifo.json"] = "skipped"
    os.symlink(os.devnull, root / "null.json")
    expect["null.json"] = "skipped"
    # Permission denied (root reads it anyway: then it is just an empty JSON object).
    denied = put("denied/config.json", "{}", "SL000" if os.geteuid() != 0 else "clean")
    denied.chmod(0)
    denied.parent.chmod(stat.S_IRWXU)
    # Issue 26, failure 19: a directory the walk cannot list is reported (root lists it).
    if os.geteuid() == 0:
        put("denied_dir/config.json", GPT2, "good")
    else:
        put("denied_dir/config.json", GPT2, "not linted")
        del expect["denied_dir/config.json"]
        expect["denied_dir"] = "SL000"
    (root / "denied_dir").chmod(0)
    return expect

"""Framework knowledge lives in the dialects: the readers name no framework and learn what a
framework's flags, loops and base classes mean through the hooks the dialects register
(`shapelint.readers.hooks`); the engines a config implies and the traits the rules ask about
are declared in each dialect's module, so no rule, perf or engine module tests a dialect's
name."""

from __future__ import annotations

import ast
import importlib
import json
import pkgutil
import re
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import configs_of, parse_text

import shapelint
from shapelint import dialects
from shapelint.core.model import Dim, Target, Traits
from shapelint.core.source import Entry
from shapelint.dialects.engines import default_engines
from shapelint.hardware.gpus import lookup
from shapelint.readers import hooks
from shapelint.rules import sl328_te_mxfp8_gated_activation as sl328
from shapelint.rules.batching import training_seq

PACKAGE = Path(shapelint.__file__).parent
DIALECT_NAMES = frozenset(str(m.NAME) for m in dialects.MODULES)
# Frameworks that have no dialect of their own name (forks, owners, file and class names).
FRAMEWORK_WORDS = DIALECT_NAMES | {
    "megatron",
    "mcore",
    "megablocks",
    "deepspeed",
    "transformers",
    "pretrainedconfig",
    "llama",
}


def _docstrings(tree: ast.AST) -> set[int]:
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            first = node.body[0] if node.body else None
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                out.add(id(first.value))
    return out


def framework_words(source: str) -> list[str]:
    """Framework names in ``source``'s string literals and identifiers (docstrings and
    comments, which cite where a fact comes from, excepted)."""
    tree = ast.parse(source)
    skip = _docstrings(tree)
    found = []
    for node in ast.walk(tree):
        texts: list[str] = []
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in skip:
            texts.append(node.value)
        elif isinstance(node, ast.Name):
            texts.append(node.id)
        elif isinstance(node, ast.Attribute):
            texts.append(node.attr)
        elif isinstance(node, ast.FunctionDef | ast.ClassDef):
            texts.append(node.name)
        for text in texts:
            for word in FRAMEWORK_WORDS:
                if re.search(rf"(?<![a-z]){re.escape(word)}(?![a-z])", text, re.IGNORECASE):
                    found.append(f"{word} in {text!r}")
    return found


READERS = sorted((PACKAGE / "readers").rglob("*.py"))


@pytest.mark.parametrize("path", READERS, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_readers_name_no_framework(path: Path) -> None:
    assert framework_words(path.read_text(encoding="utf-8")) == []


@pytest.mark.parametrize("path", READERS, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_readers_import_nothing_from_the_dialects(path: Path) -> None:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    imported = [
        n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and not n.level
    ] + [a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names]
    assert [m for m in imported if m.startswith("shapelint.dialects")] == []


def test_the_framework_check_can_fail() -> None:
    assert framework_words('FLAGS = {"--hidden-size"}\nWHO = "megatron-lm"\n') != []
    assert framework_words("X = re.compile(r'hf2mcore|convert')\n") != []
    assert framework_words("def _megatron_flags(): pass\n") != []
    assert framework_words('"""Megatron-LM\'s scripts, as an example."""\n') == []


def _dialect_modules() -> list[object]:
    return [
        importlib.import_module(f"shapelint.dialects.{m.name}")
        for m in pkgutil.iter_modules(dialects.__path__)
    ]


def test_every_module_that_declares_is_registered() -> None:
    for module in _dialect_modules():
        declares = [
            n for n in ("READER_HOOKS", "ENGINES", "engines", "TRAITS") if hasattr(module, n)
        ]
        if declares:
            assert module in dialects.MODULES, (module, declares)
        declared = getattr(module, "READER_HOOKS", None)
        if declared is not None:
            assert any(known is declared for known in hooks._REGISTERED), module


def test_modules_of_one_name_declare_alike() -> None:
    """Engines and traits are collected by the dialect's name: modules sharing one
    (torchtitan's trainer TOML and model flavours) must not disagree."""
    by_name: dict[str, set[tuple[object, object]]] = {}
    for module in dialects.MODULES:
        declared = (getattr(module, "ENGINES", None), getattr(module, "TRAITS", None))
        by_name.setdefault(str(module.NAME), set()).add(declared)
    assert {n: d for n, d in by_name.items() if len(d) > 1} == {}


# --- the shell reader learns the flags from the dialects ---------------------------------

MEGATRON_SCRIPT = (
    "torchrun pretrain_gpt.py --hidden-size 4096 --num-layers 32 \\\n  --seq-length 2048\n"
)
# A made-up framework's launch script: the reader knows nothing of --d-model until told.
OTHER_SCRIPT = """\
if [ "$SIZE" = small ]; then
  D=512
elif [ "$SIZE" = large ]; then
  D=4096
fi
python run_model.py --d-model $D --n-layers ${LAYERS:-12} --dummy 1
"""


def test_a_fresh_process_registers_the_hooks_before_reading(tmp_path: Path) -> None:
    """The CLI imports the dialects (and so registers their hooks) before it reads a file."""
    (tmp_path / "run.sh").write_text(MEGATRON_SCRIPT)
    proc = subprocess.run(
        [sys.executable, "-m", "shapelint", "--format", "json", "--no-cache", "run.sh"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
    )
    configs = json.loads(proc.stdout)["configs"]
    assert [(c["dialect"], c["dims"]["hidden"]) for c in configs] == [("megatron-lm", 4096)]


def test_the_shell_reader_reads_no_config_without_hooks(monkeypatch: pytest.MonkeyPatch) -> None:
    assert parse_text(MEGATRON_SCRIPT, "shell", "run.sh").candidates != []
    monkeypatch.setattr(hooks, "SHELL", [])
    assert parse_text(MEGATRON_SCRIPT, "shell", "run.sh").candidates == []


def test_the_shell_reader_reads_any_registered_framework(monkeypatch: pytest.MonkeyPatch) -> None:
    assert parse_text(OTHER_SCRIPT, "shell", "run.sh").candidates == []

    def finish(text: str, entries: list[Entry]) -> list[Entry]:
        return [e for e in entries if e.key != "--dummy"]

    flags = hooks.ShellFlags(
        shape_flags=frozenset({"--d-model"}),
        programs=r"(?:^|[/\s])(run_\w+\.py)\b",
        finish=finish,
    )
    monkeypatch.setattr(hooks, "SHELL", [*hooks.SHELL, flags])
    found = parse_text(OTHER_SCRIPT, "shell", "run.sh").candidates
    assert [c.name for c in found] == ["SIZE=small", "SIZE=large"]  # sizes picked by $SIZE
    assert {c.callee for c in found} == {"run_model.py"}
    values = [{e.key: getattr(e.value, "value", None) for e in c.root.entries} for c in found]
    assert values == [
        {"--d-model": 512, "--n-layers": 12},
        {"--d-model": 4096, "--n-layers": 12},
    ]


# --- the Python reader: module hooks and neutral bases -------------------------------------

LITGPT_LOOP = """\
from copy import deepcopy
configs = []
llama_2 = [dict(name="Llama-2-7b{}-hf", n_embd=4096, n_head=32, n_layer=32)]
for c in llama_2:
    for kind in ("", "-chat"):
        copy = deepcopy(c)
        copy["name"] = c["name"].format(kind)
        configs.append(copy)
"""


def test_variant_loops_come_from_the_litgpt_dialect(monkeypatch: pytest.MonkeyPatch) -> None:
    def names() -> list[str]:
        return [c.name for c in parse_text(LITGPT_LOOP, "python", "config.py").candidates]

    assert names() == ["llama_2[0] Llama-2-7b-hf", "llama_2[0] Llama-2-7b-chat-hf"]
    monkeypatch.setattr(hooks, "PYTHON_MODULES", [])
    assert names() == ["llama_2[0] Llama-2-7b{}-hf"]


HF_SUBCLASS = """\
from transformers import PretrainedConfig
class TinyConfig(PretrainedConfig):
    hidden_size = 64
"""


def test_neutral_bases_come_from_the_dialects(monkeypatch: pytest.MonkeyPatch) -> None:
    def open_bases() -> tuple[str, ...]:
        (candidate,) = parse_text(HF_SUBCLASS, "python", "config.py").candidates
        return candidate.open_bases

    assert open_bases() == ()
    monkeypatch.setattr(hooks, "NEUTRAL_BASES", set())
    assert open_bases() == ("PretrainedConfig",)


# --- engines and traits, declared by the dialects ------------------------------------------

NEMO = (
    "trainer:\n  precision: bf16\nmodel:\n  num_layers: 32\n  hidden_size: 4096\n"
    "  num_attention_heads: 32\n  make_vocab_size_divisible_by: 8\n"
)
NANOTRON = (
    "model:\n  model_config:\n    hidden_size: 576\n    num_attention_heads: 9\n"
    "    num_hidden_layers: 30\n    is_llama_config: true\n"
    "parallelism:\n  tp: 1\ntokens:\n  micro_batch_size: 8\n"
)
TITAN = '[model]\nname = "llama3"\nflavor = "8B"\n\n[training]\nseq_len = 8192\n'
MEGATRON_LOCAL = "transformer_impl: local\nlanguage_model:\n  hidden_size: 1024\n  num_layers: 4\n"


@pytest.mark.parametrize(
    ("text", "fmt", "dialect", "engines"),
    [
        (NEMO, "yaml", "nemo", ("megatron",)),
        (NANOTRON, "yaml", "nanotron", ("nanotron",)),
        (TITAN, "toml", "torchtitan", ("torchtitan",)),
        (MEGATRON_SCRIPT, "shell", "megatron-lm", ("megatron", "transformer-engine")),
        (MEGATRON_LOCAL, "yaml", "megatron-lm", ("megatron",)),
        ('{"hidden_size": 64, "num_attention_heads": 4}', "json", "hf", None),
    ],
)
def test_dialects_declare_their_engines(
    text: str, fmt: str, dialect: str, engines: tuple[str, ...] | None
) -> None:
    (config,) = configs_of(text, fmt, f"config.{fmt}")
    assert config.dialect == dialect
    assert default_engines(config) == engines


LITGPT_YAML = (
    "model_config:\n  n_embd: 2048\n  n_head: 16\n  n_layer: 16\n  block_size: 4096\n"
    "train:\n  micro_batch_size: 4\n"
)
NANOGPT = "n_layer = 12\nn_head = 12\nn_embd = 768\nblock_size = 4096\nbatch_size = 8\n"


def test_block_size_is_a_training_length_where_the_dialect_says_so() -> None:
    """LitGPT's ``block_size`` is the model's maximum context (LitGPT trains at
    ``train.max_seq_length``); nanoGPT trains at its ``block_size``."""
    (litgpt,) = configs_of(LITGPT_YAML, "yaml", "config.yaml")
    (nanogpt,) = configs_of(NANOGPT, "python", "train_gpt2.py")
    assert (litgpt.dialect, nanogpt.dialect) == ("litgpt", "nanogpt")
    assert litgpt.traits == Traits(context_keys=frozenset({"block_size"}))
    target = Target(gpu=lookup("H100-SXM"), seq_len=4096)
    assert training_seq(litgpt, target) is None
    seq = training_seq(nanogpt, target)
    assert seq is not None and seq.key == "block_size"


QWEN_WIDTHS = (
    "  hidden_size: 8192\n  num_attention_heads: 64\n  num_layers: 80\n  ffn_hidden_size: 29568\n"
)


def test_megatron_runs_its_own_mlp_activation() -> None:
    """SL328 (Transformer Engine's fused MXFP8 gated activation) does not apply to a Megatron
    config: its MLP applies its own activation; the same widths from a HF config are checked."""
    megatron = configs_of(f"language_model:\n{QWEN_WIDTHS}swiglu: true\n", "yaml", "m.yaml")[0]
    hf = configs_of(
        '{"hidden_size": 8192, "num_attention_heads": 64, "num_hidden_layers": 80,'
        ' "intermediate_size": 29568, "hidden_act": "silu"}',
    )[0]
    assert megatron.traits.own_mlp_activation and not hf.traits.own_mlp_activation
    assert megatron.gated_mlp and hf.gated_mlp
    assert megatron.int(Dim.FFN) == hf.int(Dim.FFN) == 29568
    target = Target(
        gpu=lookup("B200"), dtype="fp8", fp8_recipe="mxfp8", tp=8, engines=("transformer-engine",)
    )
    assert list(sl328.check(megatron, target)) == []
    assert len(list(sl328.check(hf, target))) == 1


def test_rules_perf_and_engine_never_test_a_dialect_name() -> None:
    """No comparison reads ``config.dialect`` outside the dialects (reports print it)."""
    found = []
    for layer in ("rules", "perf", "engine"):
        for path in sorted((PACKAGE / layer).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.Compare) and any(
                    isinstance(n, ast.Attribute) and n.attr == "dialect" for n in ast.walk(node)
                ):
                    found.append(f"{path.relative_to(PACKAGE)}:{node.lineno}")
    assert found == []

"""Real Python configs: every config module of pinned transformers, LitGPT and torchtitan wheels.

The wheels are downloaded once with ``pip download --no-deps`` into ``.cache/wheels`` and read
straight from the zip: nothing is installed, imported or executed. The test is skipped (not
failed) when PyPI cannot be reached. The numbers it asserts on are printed (see them with
``pytest -rA``, or run ``benchmarks/python_corpus_coverage.py``).
"""

from __future__ import annotations

import ast
import importlib.util
import re
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from shapelint.core.model import Dim, ModelConfig

pytestmark = [pytest.mark.corpus, pytest.mark.network]

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "python_corpus_coverage.py"


def _load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("python_corpus_coverage", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def coverage() -> Any:
    bench = _load()
    try:
        wheels = bench.download()
    except bench.Unreachable as exc:
        pytest.skip(f"PyPI unreachable, wheels not cached: {exc}")
    cov = bench.measure(wheels)
    print(bench.report(cov))
    return cov


def _shape(config: ModelConfig | None) -> tuple[int | None, ...]:
    assert config is not None
    return tuple(config.int(d) for d in (Dim.HIDDEN, Dim.HEADS, Dim.FFN, Dim.VOCAB))


def test_every_config_module_parses(coverage: Any) -> None:
    assert coverage.files >= 550
    assert coverage.errors == []


def test_transformers_classes_yield_hidden_heads_and_vocab(coverage: Any) -> None:
    assert coverage.hf_hidden_heads >= 480, coverage.hf_missing
    # Every class that declares an integer vocab_size default and goes to the HF dialect
    # yields it. (Classes another dialect claims are listed in the report.)
    missing = [m for m in coverage.hf_vocab_missing if m.endswith("(hf)")]
    assert missing == []
    assert coverage.hf_vocab_found >= coverage.hf_vocab_declared - len(coverage.hf_vocab_missing)


# litgpt 0.5.13's loops without a condition, counted by hand from its config.py:
# {list or dict: (entries, entries named with a "{}" template, variants per entry)}.
# The qwen_2_5 list is extended by qwen_2_5_coder (6) and qwen_2_5_math (3) before its loop;
# gemma's names have no placeholder (LitGPT adds them as they are and adds an "-it" copy).
# Not counted: pythia's and llama_3's loops, which skip entries with an ``if`` (LitGPT builds
# 210 configs at import; the reader leaves those two loops' 15 configs out rather than guess).
LITGPT_LOOPS = {
    "falcon": (2, 2, 2),
    "falcon180b": (1, 1, 2),
    "falcon3": (4, 4, 2),
    "llama_2": (3, 3, 2),
    "olmo2": (2, 2, 4),
    "gemma": (5, 0, 1),
    "mistral": (3, 3, 2),
    "tiny_llama": (1, 1, 2),
    "qwen_2_5": (16, 16, 2),
    "qwen_3": (5, 5, 2),
    "qwen_3_2507_thinking_instruct": (3, 3, 2),
    "salamandra": (2, 2, 2),
    "smollm2": (3, 3, 2),
}
# 141 written entries - 45 templates + 99 variants, plus the Config class.
LITGPT_CONFIGS = 196

_LIST = re.compile(r"^(\w+) = \[\n(.*?)^\]", re.M | re.S)
_DICT = re.compile(r"^(\w+) = dict\(\n(.*?)^\)", re.M | re.S)
_EXTEND = re.compile(r"^(\w+)\.extend\((\w+)\)$", re.M)
_LOOP = re.compile(r"^for .+? in (.+?):\n((?:[ \t]+.*\n|\n)*)", re.M)
_INNER = re.compile(r"[ \t]+for .+? in (.+?):\n")
_TEMPLATE = re.compile(r'^\s+name="[^"]*\{\}', re.M)


def _litgpt_loops(source: str) -> dict[str, tuple[int, int, int]]:
    """`LITGPT_LOOPS` read from the text with regexes (independently of the reader): the lists
    (``x = [``…``]``, ``x.extend(y)``) and dicts that a top-level loop without ``if`` or
    ``continue`` deep-copies, and how many names each entry gets."""
    events = sorted(
        [(m.start(), "list", m) for m in _LIST.finditer(source)]
        + [(m.start(), "dict", m) for m in _DICT.finditer(source)]
        + [(m.start(), "extend", m) for m in _EXTEND.finditer(source)]
        + [(m.start(), "loop", m) for m in _LOOP.finditer(source)],
        key=lambda event: event[0],
    )
    entries: dict[str, tuple[int, int]] = {}
    loops: dict[str, tuple[int, int, int]] = {}
    for _, kind, m in events:
        if kind in ("list", "dict"):
            body = m.group(2)
            count = body.count("hf_config=dict(") if kind == "list" else 1
            entries[m.group(1)] = (count, len(_TEMPLATE.findall(body)))
        elif kind == "extend" and m.group(1) in entries and m.group(2) in entries:
            (a, at), (b, bt) = entries[m.group(1)], entries[m.group(2)]
            entries[m.group(1)] = (a + b, at + bt)
        elif kind == "loop":
            iterable, body = m.groups()
            if re.search(r"^\s+(if|continue)\b", body, re.M) or "deepcopy(" not in body:
                continue
            inner = _INNER.match(body)
            kinds = len(ast.literal_eval(inner.group(1))) if inner else 1
            copied = re.search(r"deepcopy\((\w+)\)", body)
            if iterable.startswith("(") and copied is not None:
                kinds, iterable = len(ast.literal_eval(iterable)), copied.group(1)
            if iterable in entries:
                loops[iterable] = (*entries[iterable], kinds)
    return loops


def test_litgpt_loops_build_the_name_variants(coverage: Any) -> None:
    assert _litgpt_loops(coverage.litgpt_source) == LITGPT_LOOPS
    assert coverage.litgpt_entries_written == 141
    assert coverage.litgpt_templates_written == 52  # 45 of them in LITGPT_LOOPS, 7 in llama_3
    variants = sum(
        entries * kinds - templates for entries, templates, kinds in LITGPT_LOOPS.values()
    )
    assert coverage.litgpt_entries_written + variants + 1 == LITGPT_CONFIGS
    assert coverage.litgpt_configs == LITGPT_CONFIGS >= 150
    assert coverage.litgpt_hidden_heads == coverage.litgpt_configs


def test_litgpt_findings_are_reported_once(coverage: Any) -> None:
    # The variants share their template's values: a finding on one is reported once.
    assert coverage.litgpt_findings > 0
    assert coverage.litgpt_repeated_findings == []


def test_llama_2_7b_in_transformers_and_litgpt(coverage: Any) -> None:
    assert _shape(coverage.hf_llama) == (4096, 32, 11008, 32000)
    assert _shape(coverage.litgpt_llama) == (4096, 32, 11008, 32000)
    assert _shape(coverage.litgpt_llama_chat) == (4096, 32, 11008, 32000)
    assert coverage.litgpt_llama.name == "llama_2[0] Llama-2-7b-hf"
    assert coverage.litgpt_llama_chat.name == "llama_2[0] Llama-2-7b-chat-hf"


def test_torchtitan_llama3_8b_ffn(coverage: Any) -> None:
    found = {c.name: c for c in coverage.torchtitan_configs}
    eight = found['llama3_args["8B"]']
    assert (eight.int(Dim.HIDDEN), eight.int(Dim.HEADS), eight.int(Dim.FFN)) == (4096, 32, 14336)
    assert found['llama3_args["405B"]'].int(Dim.FFN) == 53248

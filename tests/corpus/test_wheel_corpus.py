"""Real Python configs: every config module of pinned transformers, LitGPT and torchtitan wheels.

The wheels are downloaded once with ``pip download --no-deps`` into ``.cache/wheels`` and read
straight from the zip: nothing is installed, imported or executed. The test is skipped (not
failed) when PyPI cannot be reached. The numbers it asserts on are printed (see them with
``pytest -rA``, or run ``benchmarks/python_corpus_coverage.py``).
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from shapelint.lint.model import Dim, ModelConfig

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


def test_litgpt_every_written_entry_is_a_config(coverage: Any) -> None:
    # One config per dict(...) entry as written (141 in litgpt 0.5.13) plus the Config class;
    # the name variants LitGPT's loops derive at import time (-chat, -Instruct …) share their
    # template's values and are not expanded.
    assert coverage.litgpt_entries_written >= 140
    assert coverage.litgpt_configs == coverage.litgpt_entries_written + 1
    assert coverage.litgpt_hidden_heads == coverage.litgpt_configs


def test_llama_2_7b_in_transformers_and_litgpt(coverage: Any) -> None:
    assert _shape(coverage.hf_llama) == (4096, 32, 11008, 32000)
    assert _shape(coverage.litgpt_llama) == (4096, 32, 11008, 32000)


def test_torchtitan_llama3_8b_ffn(coverage: Any) -> None:
    found = {c.name: c for c in coverage.torchtitan_configs}
    eight = found['llama3_args["8B"]']
    assert (eight.int(Dim.HIDDEN), eight.int(Dim.HEADS), eight.int(Dim.FFN)) == (4096, 32, 14336)
    assert found['llama3_args["405B"]'].int(Dim.FFN) == 53248

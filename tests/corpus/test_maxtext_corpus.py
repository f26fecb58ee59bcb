"""MaxText's model YAMLs (``configs/models/*.yml`` of the pinned maxtext wheel), read at test time.

The wheel is downloaded once with ``pip download --no-deps --python-version 3.12
--only-binary=:all: maxtext`` into ``.cache/wheels`` and read from the zip; the test is skipped
when PyPI cannot be reached. Expected dims come from ``yaml.safe_load`` of each file over
MaxText's own ``configs/base.yml`` (the values a model YAML inherits), never from shapelint;
the named models' numbers are also the published ones. The coverage table is printed (see it
with ``pytest -rA`` or ``benchmarks/config_coverage.py``).
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import yaml

from shapelint.core.model import Dim, ModelConfig
from shapelint.dialects import extract
from shapelint.readers import parse

pytestmark = [pytest.mark.corpus, pytest.mark.network]

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "config_coverage.py"


def _load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("config_coverage", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def bench() -> ModuleType:
    return _load()


@pytest.fixture(scope="module")
def files(bench: ModuleType) -> tuple[dict[str, str], dict[str, Any]]:
    try:
        wheel = bench.download()
    except bench.Unreachable as exc:
        pytest.skip(f"PyPI unreachable and maxtext wheel not cached: {exc}")
    models, base = bench.maxtext_files(wheel)
    assert models and base
    return models, base


def _model(files: tuple[dict[str, str], dict[str, Any]], name: str) -> tuple[str, dict[str, Any]]:
    models, base = files
    (text,) = [t for p, t in models.items() if p.endswith(f"/models/{name}.yml")]
    return text, {**base, **(yaml.safe_load(text) or {})}


def _config(text: str, name: str) -> ModelConfig:
    doc = parse(f"{name}.yml", text.encode(), "yaml")
    (config,) = extract(doc)
    return config


def _ints(config: ModelConfig, *dims: Dim) -> tuple[int | None, ...]:
    return tuple(config.int(d) for d in dims)


SHAPE = (Dim.HIDDEN, Dim.HEADS, Dim.KV_HEADS, Dim.FFN, Dim.LAYERS, Dim.HEAD_DIM, Dim.VOCAB)


@pytest.mark.parametrize(
    ("name", "published"),
    [
        # Llama-2-7B: 4096 wide, 32 heads (MHA), FFN 11008, 32 layers, vocab 32000.
        ("llama2-7b", (4096, 32, 32, 11008, 32, 128, 32000)),
        # Llama-3-70B: 8192, 64 heads, 8 KV heads, FFN 28672, 80 layers, vocab 128256.
        ("llama3-70b", (8192, 64, 8, 28672, 80, 128, 128256)),
        # Gemma-2-27B: 4608, 32 heads, 16 KV heads, head dim 128, FFN 36864, 46 layers.
        ("gemma2-27b", (4608, 32, 16, 36864, 46, 128, 256128)),
        # GPT-3 6B as MaxText defines it: head_dim 256 is stated, not hidden / heads.
        ("gpt3-6b", (3072, 12, 12, 12288, 48, 256, 32768)),
    ],
)
def test_named_dense_models(
    files: tuple[dict[str, str], dict[str, Any]], name: str, published: tuple[int, ...]
) -> None:
    text, raw = _model(files, name)
    independent = (
        raw["base_emb_dim"],
        raw["base_num_query_heads"],
        raw["base_num_kv_heads"],
        raw["base_mlp_dim"],
        raw["base_num_decoder_layers"],
        raw["head_dim"],
        raw["vocab_size"],
    )
    if raw["decoder_block"] == "gemma2":  # one MaxText layer = local + global attention layer
        independent = (*independent[:4], 2 * independent[4], *independent[5:])
    assert independent == published
    config = _config(text, name)
    assert config.dialect == "maxtext"
    assert _ints(config, *SHAPE) == published
    assert config.pretrained  # a released model's config: fixes only unsafe


def test_deepseek3_mla_and_moe(files: tuple[dict[str, str], dict[str, Any]]) -> None:
    text, raw = _model(files, "deepseek3-671b")
    head_dim = raw["qk_nope_head_dim"] + raw["qk_rope_head_dim"]
    assert (head_dim, raw["v_head_dim"]) == (192, 128)  # DeepSeek-V3: 128 + 64, values 128
    config = _config(text, "deepseek3-671b")
    assert _ints(config, Dim.HIDDEN, Dim.HEADS, Dim.LAYERS, Dim.HEAD_DIM, Dim.V_HEAD_DIM) == (
        raw["base_emb_dim"],
        raw["base_num_query_heads"],
        raw["base_num_decoder_layers"],
        head_dim,
        raw["v_head_dim"],
    )
    assert _ints(config, Dim.EXPERTS, Dim.EXPERTS_PER_TOKEN, Dim.MOE_FFN, Dim.VOCAB) == (
        256,
        8,
        2048,
        129280,
    )


def test_mixtral_experts(files: tuple[dict[str, str], dict[str, Any]]) -> None:
    text, raw = _model(files, "mixtral-8x7b")
    config = _config(text, "mixtral-8x7b")
    assert _ints(config, Dim.EXPERTS, Dim.EXPERTS_PER_TOKEN, Dim.MOE_FFN, Dim.KV_HEADS) == (
        raw["num_experts"],
        raw["num_experts_per_tok"],
        raw["base_moe_mlp_dim"],
        raw["base_num_kv_heads"],
    )
    assert config.gated_mlp is True  # ["silu", "linear"]


def test_coverage(bench: ModuleType, files: tuple[dict[str, str], dict[str, Any]]) -> None:
    cov = bench.measure_maxtext(bench.download())
    print(bench.report([cov]))
    assert cov.expected == len(files[0]) >= 80
    assert cov.wrong == []
    assert cov.right >= 0.95 * cov.expected, cov.unknown

"""Gemma 4's full-attention layers attend with ``global_head_dim``-wide heads (512), its
sliding-window layers with ``head_dim`` (256).

transformers 5.25.0, ``models/gemma4/configuration_gemma4.py``:

- :185-196: ``layer_types`` defaults to every sixth layer ``"full_attention"`` (the rest
  ``"sliding_attention"``) and the last layer is forced to ``"full_attention"``;
- :205-218: ``global_head_dim`` (default 512) becomes ``per_layer_config[i].head_dim`` of every
  ``"full_attention"`` layer, unless the config states ``per_layer_config`` itself;

and ``modeling_gemma4.py:1152-1153``: ``Gemma4TextAttention`` takes its ``head_dim`` from
``per_layer_config[layer_idx]``.

The fixture holds google/gemma-4-31B-it's text config values as printed by transformers 5.7.0
(``Gemma4Config`` repr, in a model report stored in the public-code index; the Hub file itself
was not reachable from here), which a second stored copy (a transformers 5.5.0.dev0 config
template) repeats: hidden 5376, 60 layers, 32 heads, 16 KV heads, head_dim 256,
global_head_dim 512, num_global_key_value_heads 4, attention_k_eq_v true, sliding window 1024,
layers 5, 11, …, 59 full attention. The printed module tree agrees: the full-attention layers'
q_proj is 5376 -> 16384 (32 x 512), the others' 5376 -> 8192 (32 x 256).
"""

from __future__ import annotations

import io
import json
from pathlib import Path

from conftest import configs_of

from shapelint.cli.main import main
from shapelint.core.model import Dim
from shapelint.perf.workload import layer_plan

LAYERS = 60
# Gemma4TextConfig's default pattern (configuration_gemma4.py:186-190), which the 31B config
# lists in full.
LAYER_TYPES = ["sliding_attention" if (i + 1) % 6 else "full_attention" for i in range(LAYERS)]
GEMMA4_31B_TEXT = {
    "model_type": "gemma4_text",
    "hidden_size": 5376,
    "intermediate_size": 21504,
    "num_hidden_layers": LAYERS,
    "num_attention_heads": 32,
    "num_key_value_heads": 16,
    "num_global_key_value_heads": 4,
    "attention_k_eq_v": True,
    "head_dim": 256,
    "global_head_dim": 512,
    "layer_types": LAYER_TYPES,
    "sliding_window": 1024,
    "max_position_embeddings": 262144,
    "vocab_size": 262144,
}
GEMMA4_31B = {
    "architectures": ["Gemma4ForConditionalGeneration"],
    "model_type": "gemma4",
    "text_config": GEMMA4_31B_TEXT,
}
# TensorRT-LLM's MMHA decoder kernels (decoderMaskedMultiheadAttention.cu at 0ab9d17a:
# MMHA_SUPPORTED_HEAD_SIZES); AttentionOp::initialize (attentionOp.cpp at 00dbe288) lets 72
# through as well and refuses every other head size.
MMHA = {32, 48, 64, 80, 96, 104, 112, 128, 144, 160, 192, 224, 256}
# FlashAttention-2/3 (flash-attention 2.8.4, csrc/flash_attn/flash_api.cpp:416-418): at most 256.
FA_MAX = 256


def findings(tmp_path: Path, data: dict[str, object], *argv: str) -> list[dict[str, object]]:
    path = tmp_path / "config.json"
    path.write_text(json.dumps(data))
    out, err = io.StringIO(), io.StringIO()
    main(["check", str(path), "--no-cache", "--format", "json", *argv], out, err)
    found: list[dict[str, object]] = json.loads(out.getvalue())["findings"]
    return found


def test_reads_the_global_head_dim_and_does_not_time_two_head_dims() -> None:
    (config,) = configs_of(json.dumps(GEMMA4_31B))
    text = GEMMA4_31B_TEXT
    assert config.int(Dim.HEAD_DIM) == text["head_dim"]
    assert config.int(Dim.GLOBAL_HEAD_DIM) == text["global_head_dim"]
    full = LAYER_TYPES.count("full_attention")
    assert full == 10
    # One head dim per step model: the estimate is not made rather than made at 256 for all.
    assert config.untimed.startswith(f"{full} of {LAYERS} layers (full_attention)")
    assert layer_plan(config) is None


def test_trtllm_refuses_the_global_layers_head_size(tmp_path: Path) -> None:
    assert GEMMA4_31B_TEXT["head_dim"] in MMHA and GEMMA4_31B_TEXT["global_head_dim"] not in MMHA
    for gpu in ("H100", "A100", "B200"):
        (f,) = findings(
            tmp_path, GEMMA4_31B, "--engine", "tensorrt-llm", "--gpu", gpu, "--select", "SL326"
        )
        assert f["key"] == "text_config.global_head_dim"
        assert "Head size 512 is not supported by MMHA" in str(f["message"])


def test_flash_attention_refuses_the_global_layers_head_dim(tmp_path: Path) -> None:
    assert GEMMA4_31B_TEXT["head_dim"] <= FA_MAX < GEMMA4_31B_TEXT["global_head_dim"]
    for engine in ("flash-attn2", "flash-attn3"):
        (f,) = findings(tmp_path, GEMMA4_31B, "--engine", engine, "--select", "SL302")
        assert f["key"] == "text_config.global_head_dim"
        assert "head dim 512" in str(f["message"])
    (f,) = findings(
        tmp_path, GEMMA4_31B, "--engine", "flash-attn4", "--gpu", "H100", "--select", "SL320"
    )
    assert f["key"] == "text_config.global_head_dim" and "512" in str(f["message"])
    (f,) = findings(
        tmp_path, GEMMA4_31B, "--engine", "transformer-engine", "--gpu", "H100", "--select", "SL321"
    )
    assert f["key"] == "text_config.global_head_dim" and "head dim 512" in str(f["message"])


def test_left_out_global_head_dim_takes_the_class_default(tmp_path: Path) -> None:
    # Gemma4TextConfig pops global_head_dim with a default of 512 (configuration_gemma4.py:205).
    text = {k: v for k, v in GEMMA4_31B_TEXT.items() if k != "global_head_dim"}
    (config,) = configs_of(json.dumps({**GEMMA4_31B, "text_config": text}))
    assert config.int(Dim.GLOBAL_HEAD_DIM) == 512
    (f,) = findings(
        tmp_path, {**GEMMA4_31B, "text_config": text}, "--engine", "trtllm", "--select", "SL326"
    )
    assert "Head size 512" in str(f["message"])


def test_equal_head_dims_and_stated_per_layer_config() -> None:
    # Hand-made variants (not released models): both head dims 256 are one attention, timed;
    # a stated per_layer_config replaces global_head_dim (configuration_gemma4.py:207): unknown.
    same = {**GEMMA4_31B_TEXT, "global_head_dim": 256}
    (config,) = configs_of(json.dumps(same))
    assert not config.untimed and layer_plan(config) is not None
    stated = {**GEMMA4_31B_TEXT, "per_layer_config": {"5": {"head_dim": 512}}}
    (config,) = configs_of(json.dumps(stated))
    assert config.get(Dim.GLOBAL_HEAD_DIM) is None and layer_plan(config) is None

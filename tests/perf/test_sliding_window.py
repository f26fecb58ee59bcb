"""Sliding-window attention: which layers use a window (read the way transformers assigns it)
and what the step model charges for them.

Layer counts are worked out here by hand from transformers' rules (5.24.0): Gemma 3 slides on
layer i when (i + 1) % 6 != 0 (configuration_gemma3.py), Gemma 2 and gpt-oss when (i + 1) % 2
!= 0, Mistral's attention takes the window in every layer (modeling_mistral.py), Qwen2 only with
``use_sliding_window`` and from ``max_window_layers`` on. Shapes are the released configs'
(config.json of each model on the Hub), written here by hand.

The FLOPs are counted by hand: causal flash attention does 4·s²·d per head in the forward
pass, counted half for the mask; a window w keeps w(w + 1)/2 + (s − w)·w of the s(s + 1)/2
(query, key) pairs.
"""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest

from shapelint.cli.main import main

GEMMA3_4B_TEXT = {
    "model_type": "gemma3_text",
    "hidden_size": 2560,
    "intermediate_size": 10240,
    "num_attention_heads": 8,
    "num_key_value_heads": 4,
    "head_dim": 256,
    "num_hidden_layers": 34,
    "sliding_window": 1024,
    "sliding_window_pattern": 6,
    "vocab_size": 262208,
}
GEMMA2_9B = {
    "model_type": "gemma2",
    "hidden_size": 3584,
    "intermediate_size": 14336,
    "num_attention_heads": 16,
    "num_key_value_heads": 8,
    "head_dim": 256,
    "num_hidden_layers": 42,
    "sliding_window": 4096,
    "vocab_size": 256000,
}
GPT_OSS_20B = {
    "model_type": "gpt_oss",
    "hidden_size": 2880,
    "intermediate_size": 2880,
    "num_attention_heads": 64,
    "num_key_value_heads": 8,
    "head_dim": 64,
    "num_hidden_layers": 24,
    "num_local_experts": 32,
    "num_experts_per_tok": 4,
    "sliding_window": 128,
    "layer_types": ["sliding_attention", "full_attention"] * 12,
    "vocab_size": 201088,
}
MISTRAL_7B_V01 = {
    "model_type": "mistral",
    "hidden_size": 4096,
    "intermediate_size": 14336,
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
    "num_hidden_layers": 32,
    "sliding_window": 4096,
    "vocab_size": 32000,
}
QWEN25_7B = {
    "model_type": "qwen2",
    "hidden_size": 3584,
    "intermediate_size": 18944,
    "num_attention_heads": 28,
    "num_key_value_heads": 4,
    "num_hidden_layers": 28,
    "sliding_window": 131072,
    "use_sliding_window": False,
    "max_window_layers": 28,
    "vocab_size": 152064,
}


def _write(tmp_path: Path, config: dict[str, Any]) -> Path:
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    return path


def dims(tmp_path: Path, config: dict[str, Any]) -> dict[str, Any]:
    out, err = io.StringIO(), io.StringIO()
    path = _write(tmp_path, config)
    main(["check", str(path), "--no-cache", "--exit-zero", "--format", "json"], out, err)
    (found,) = json.loads(out.getvalue())["configs"]
    return dict(found["dims"])


def explain(tmp_path: Path, config: dict[str, Any], *argv: str) -> dict[str, Any]:
    out, err = io.StringIO(), io.StringIO()
    path = _write(tmp_path, config)
    code = main(["explain", str(path), "--format", "json", "--gpu", "H100-SXM", *argv], out, err)
    assert code == 0, err.getvalue()
    data = json.loads(out.getvalue())
    return dict(data["configs"][0] if "configs" in data else data)


def test_window_layers_follow_transformers_rules(tmp_path: Path) -> None:
    # Gemma 3: layers 5, 11, 17, 23, 29 (i + 1 divisible by 6) are global; 34 − 5 = 29 slide.
    assert (
        dims(tmp_path, GEMMA3_4B_TEXT)["sliding_window"],
        dims(tmp_path, GEMMA3_4B_TEXT)["window_layers"],
    ) == (1024, 29)
    # Gemma 2: every even layer (i = 0, 2, …, 40) slides: 21 of 42.
    assert dims(tmp_path, GEMMA2_9B)["window_layers"] == 21
    # gpt-oss lists its layer types: 12 sliding of 24.
    assert dims(tmp_path, GPT_OSS_20B)["window_layers"] == 12
    # Mistral 7B v0.1: every layer.
    assert dims(tmp_path, MISTRAL_7B_V01)["window_layers"] == 32


def test_no_window_where_the_model_does_not_use_one(tmp_path: Path) -> None:
    # Qwen2.5 states a window but use_sliding_window is false.
    assert "sliding_window" not in dims(tmp_path, QWEN25_7B)
    # Mistral 7B v0.3: the window is null.
    assert "sliding_window" not in dims(tmp_path, {**MISTRAL_7B_V01, "sliding_window": None})
    # A model type whose rule is not known here: unknown, timed as full attention.
    assert "sliding_window" not in dims(tmp_path, {**MISTRAL_7B_V01, "model_type": "llama"})
    # A layer_types list that does not match the layer count.
    odd = {**GPT_OSS_20B, "layer_types": ["sliding_attention"] * 10}
    assert "window_layers" not in dims(tmp_path, odd)
    # EmbeddingGemma-style bidirectional Gemma 3: its class rewrites the window.
    bidirectional = {**GEMMA3_4B_TEXT, "use_bidirectional_attention": True}
    assert "sliding_window" not in dims(tmp_path, bidirectional)


def test_qwen2_with_the_window_on_slides_from_max_window_layers(tmp_path: Path) -> None:
    config = {**QWEN25_7B, "use_sliding_window": True, "sliding_window": 4096}
    config["max_window_layers"] = 21
    assert dims(tmp_path, config)["window_layers"] == 28 - 21


def _flash(data: dict[str, Any], name: str, pass_: str) -> dict[str, Any]:
    (row,) = [g for g in data["gemms"] if g["name"] == name and g["pass"] == pass_]
    return dict(row)


def test_windowed_layers_count_only_the_pairs_inside_the_window(tmp_path: Path) -> None:
    data = explain(tmp_path, GEMMA3_4B_TEXT, "--seq-len", "4096", "--micro-batch", "1")
    full, local = _flash(data, "attention", "fwd"), _flash(data, "window_attn", "fwd")
    assert (full["count"], local["count"]) == (5, 29)
    s, d, heads = 4096, 256, 8
    causal = 4 * s * s * d * heads * 0.5
    assert abs(full["flops"] - causal) / causal < 1e-9
    # Window 1024 of 4096: 1024·1025/2 + 3072·1024 = 3,670,528 of 4096·4097/2 = 8,390,656.
    assert abs(local["flops"] - causal * 3_670_528 / 8_390_656) / causal < 1e-9
    assert local["window"] == 1024


def test_a_window_as_long_as_the_sequence_changes_nothing(tmp_path: Path) -> None:
    short = explain(tmp_path, GEMMA3_4B_TEXT, "--seq-len", "1024")
    assert not [g for g in short["gemms"] if g["name"] == "window_attn"]
    full = explain(tmp_path, {**GEMMA3_4B_TEXT, "sliding_window": None}, "--seq-len", "1024")
    assert short["step_time_s"] == full["step_time_s"]


def test_kernels_without_block_skipping_are_timed_over_the_whole_triangle(
    tmp_path: Path,
) -> None:
    for kernel in ("sdpa", "cudnn", "unfused"):
        data = explain(tmp_path, GEMMA3_4B_TEXT, "--seq-len", "4096", "--attention", kernel)
        assert not [g for g in data["gemms"] if g["name"] == "window_attn"], kernel


def test_decode_reads_only_the_window_of_the_cache(tmp_path: Path) -> None:
    data = explain(tmp_path, GEMMA3_4B_TEXT, "--seq-len", "8192", "--mode", "decode")
    scores = [g for g in data["gemms"] if g["name"] == "attn_scores"]
    assert sorted((g["n"], g["count"]) for g in scores) == [(1024, 29), (8192, 5)]


def test_windows_shorten_the_step(tmp_path: Path) -> None:
    windowed = explain(tmp_path, GEMMA3_4B_TEXT, "--seq-len", "8192")
    full = explain(tmp_path, {**GEMMA3_4B_TEXT, "sliding_window": None}, "--seq-len", "8192")
    assert windowed["step_time_s"] < full["step_time_s"]


@pytest.mark.corpus
def test_executorch_params_list_their_layer_types(corpus: Path) -> None:
    # ExecuTorch's Gemma 3 1B params.json: the window and its layers, counted here with json.
    path = (
        corpus / "llama_params_json/pytorch+executorch/examples/models/gemma3/config/1b_config.json"
    )
    raw = json.loads(path.read_text())
    out = io.StringIO()
    main(["check", str(path), "--no-cache", "--exit-zero", "--format", "json"], out, io.StringIO())
    (config,) = json.loads(out.getvalue())["configs"]
    assert config["dims"]["sliding_window"] == raw["sliding_window"]
    assert config["dims"]["window_layers"] == raw["layer_types"].count("sliding_attention")

"""Hybrid models whose other layers are mixers the performance model has no cost for (linear
attention, Mamba, short convolutions) are not timed: an estimate that timed every layer as
softmax attention would rest on a structure the model does not have.

Shapes are the released configs' (Hub ``config.json`` of Qwen3-Next-80B-A3B, NVIDIA
Nemotron-H-8B, AI21 Jamba-v0.1, Google Gemma 2 2B), written here by hand and trimmed
(Nemotron-H's layer pattern is of its form, not its exact one).
"""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

from shapelint.cli.main import main

QWEN3_NEXT = {
    "model_type": "qwen3_next",
    "hidden_size": 2048,
    "num_attention_heads": 16,
    "num_key_value_heads": 2,
    "head_dim": 256,
    "num_hidden_layers": 48,
    "intermediate_size": 5120,
    "vocab_size": 151936,
    "layer_types": ["linear_attention", "linear_attention", "linear_attention", "full_attention"]
    * 12,
}
NEMOTRON_H_8B = {
    "model_type": "nemotron_h",
    "hidden_size": 4096,
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
    "num_hidden_layers": 54,
    "intermediate_size": 21504,
    "vocab_size": 131072,
    # Nemotron-H's form (M Mamba, * attention, - MLP), not the 8B's exact pattern: each
    # "M-M-M-M*-" is 9 layers, 4 of them Mamba.
    "hybrid_override_pattern": "M-M-M-M*-" * 6,
}
JAMBA = {
    "model_type": "jamba",
    "hidden_size": 4096,
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
    "num_hidden_layers": 32,
    "intermediate_size": 14336,
    "vocab_size": 65536,
    "attn_layer_period": 8,
    "attn_layer_offset": 4,
}
GEMMA2_2B = {
    "model_type": "gemma2",
    "hidden_size": 2304,
    "num_attention_heads": 8,
    "num_key_value_heads": 4,
    "head_dim": 256,
    "num_hidden_layers": 26,
    "intermediate_size": 9216,
    "vocab_size": 256000,
    "sliding_window": 4096,
    "layer_types": ["sliding_attention", "full_attention"] * 13,
}


def explain(tmp_path: Path, config: dict[str, Any]) -> tuple[dict[str, Any], str]:
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    out, err = io.StringIO(), io.StringIO()
    assert main(["explain", str(path), "--format", "json"], out, err) == 0, err.getvalue()
    data = json.loads(out.getvalue())
    text = io.StringIO()
    main(["explain", str(path)], text, io.StringIO())
    return dict(data["configs"][0] if "configs" in data else data), text.getvalue()


def test_hybrids_are_not_timed_and_say_why(tmp_path: Path) -> None:
    cases = (
        (QWEN3_NEXT, "36 of 48 layers are linear_attention (layer_types)"),
        (NEMOTRON_H_8B, "24 of 54 layers are Mamba (hybrid_override_pattern)"),
        (JAMBA, "one layer in 8 has attention, the others Mamba (attn_layer_period)"),
        # Falcon-H1: Mamba-2 beside attention in every layer.
        (
            {**JAMBA, "model_type": "falcon_h1", "attn_layer_period": None, "mamba_d_ssm": 1024},
            "state-space or recurrent layers (mamba_d_ssm)",
        ),
    )
    for config, why in cases:
        data, text = explain(tmp_path, config)
        assert data["gemms"] == [] and data["untimed"] == why, config["model_type"]
        assert f"no GEMMs: {why}: the performance model has no cost" in text


def test_attention_only_layer_types_are_timed(tmp_path: Path) -> None:
    data, _ = explain(tmp_path, GEMMA2_2B)
    assert data["gemms"] and data["untimed"] is None


def test_a_hybrid_keeps_its_shape_findings(tmp_path: Path) -> None:
    # The attention layers are still attention: a head dim of 80 is still reported.
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**QWEN3_NEXT, "head_dim": 80}))
    out = io.StringIO()
    main(["check", str(path), "--no-cache", "--exit-zero", "--format", "json"], out, io.StringIO())
    codes = [f["code"] for f in json.loads(out.getvalue())["findings"]]
    assert "SL102" in codes

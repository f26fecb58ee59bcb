"""OLMo's own Hugging Face config (``model_type: hf_olmo``, ``hf_olmo/configuration_olmo.py``
in allenai/OLMo): OLMo's ``ModelConfig`` fields, flat, read by OLMo's model code.

Shapes are allenai/OLMo-1B's and OLMo-7B's ``config.json`` on the Hub, written here by hand.
Expected values by OLMo's rules (``olmo/model.py``): the embedding and logit layers are
``embedding_size`` rows; the MLP's first projection is ``mlp_hidden_size`` or
``mlp_ratio · d_model`` wide and SwiGLU halves it.
"""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

from shapelint.cli.main import main

OLMO_1B = {
    "architectures": ["OLMoForCausalLM"],
    "model_type": "hf_olmo",
    "d_model": 2048,
    "n_heads": 16,
    "n_layers": 16,
    "mlp_ratio": 8,
    "mlp_hidden_size": None,
    "activation_type": "swiglu",
    "vocab_size": 50280,
    "embedding_size": 50304,
    "max_sequence_length": 2048,
    "weight_tying": True,
}
OLMO_7B = {
    **OLMO_1B,
    "d_model": 4096,
    "n_heads": 32,
    "n_layers": 32,
    "mlp_hidden_size": 22016,
    "weight_tying": False,
}


def check(tmp_path: Path, config: dict[str, Any]) -> dict[str, Any]:
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    out, err = io.StringIO(), io.StringIO()
    main(["check", str(path), "--no-cache", "--exit-zero", "--format", "json"], out, err)
    return dict(json.loads(out.getvalue()))


def test_olmo_1b_reads_the_padded_embedding_and_the_swiglu_width(tmp_path: Path) -> None:
    result = check(tmp_path, OLMO_1B)
    (config,) = result["configs"]
    assert config["dialect"] == "olmo"
    dims = config["dims"]
    assert (dims["hidden"], dims["heads"], dims["layers"]) == (2048, 16, 16)
    assert (dims["vocab"], dims["padded_vocab"]) == (50280, 50304)
    assert dims["ffn"] == 8 * 2048 // 2
    # 50280 is not a multiple of 64, but the embedding OLMo builds is 50304 = 786 · 64.
    assert "SL101" not in [f["code"] for f in result["findings"]]


def test_olmo_7b_mlp_hidden_size(tmp_path: Path) -> None:
    (config,) = check(tmp_path, OLMO_7B)["configs"]
    assert config["dims"]["ffn"] == 22016 // 2


def test_the_context_length_is_not_a_training_length(tmp_path: Path) -> None:
    (config,) = check(tmp_path, {**OLMO_1B, "max_sequence_length": 8192})["configs"]
    assert config["dims"]["seq_len"] == 8192
    assert config["target"]["seq_len"] == 4096  # capped like any checkpoint's context

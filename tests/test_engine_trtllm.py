"""TensorRT-LLM (named only): SL301's heads vs tensor parallel (``Attention.__init__`` at
c6d3bb2a) and SL326's head size vs the KV-cache kernels' vector width (2340c776).

Shapes are published configs' numbers, written by hand with their sources.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

from shapelint.cli import main

# Qwen2-7B (Qwen/Qwen2-7B config.json): 28 heads, 4 KV heads.
QWEN2_7B = {
    "hidden_size": 3584,
    "num_attention_heads": 28,
    "num_key_value_heads": 4,
    "intermediate_size": 18944,
    "num_hidden_layers": 28,
    "vocab_size": 152064,
}
# OpenLLaMA 3B (openlm-research/open_llama_3b config.json): 3200 / 32 = head dim 100.
OPEN_LLAMA_3B = {
    "hidden_size": 3200,
    "num_attention_heads": 32,
    "intermediate_size": 8640,
    "num_hidden_layers": 26,
    "vocab_size": 32000,
}


def codes(tmp_path: Path, data: dict[str, object], *argv: str) -> list[tuple[str, str]]:
    path = tmp_path / "config.json"
    path.write_text(json.dumps(data))
    out, err = io.StringIO(), io.StringIO()
    main(["check", str(path), "--no-cache", "--format", "json", "--select", "SL3", *argv], out, err)
    return [(f["code"], f["message"]) for f in json.loads(out.getvalue())["findings"]]


def test_heads_must_divide_tp(tmp_path: Path) -> None:
    # 28 % 8 == 4: TensorRT-LLM's assert fails.
    (finding,) = codes(tmp_path, QWEN2_7B, "--engine", "tensorrt-llm", "--tp", "8")
    assert finding[0] == "SL301" and "28 % 8" in finding[1] and "TensorRT-LLM" in finding[1]
    # 28 % 4 == 0; its 4 KV heads split one per rank.
    assert codes(tmp_path, QWEN2_7B, "--engine", "trtllm", "--tp", "4") == []
    # KV heads are never checked: 4 KV heads at TP 8 are replicated, no finding.
    llama = {**QWEN2_7B, "num_attention_heads": 32, "hidden_size": 4096}
    assert codes(tmp_path, llama, "--engine", "trtllm", "--tp", "8") == []


def test_head_size_multiple_of_the_vector_width(tmp_path: Path) -> None:
    (finding,) = codes(tmp_path, OPEN_LLAMA_3B, "--engine", "tensorrt-llm")
    # 100 % 8 == 4 in bf16 (16-bit: 8 elements per 16 bytes).
    assert finding[0] == "SL326" and "head dim 100, X = 8" in finding[1]
    # In fp32 a vector holds 4 elements and 100 % 4 == 0.
    assert codes(tmp_path, OPEN_LLAMA_3B, "--engine", "tensorrt-llm", "--dtype", "fp32") == []


def test_only_when_named(tmp_path: Path) -> None:
    found = codes(tmp_path, OPEN_LLAMA_3B)
    assert all(code != "SL326" for code, _ in found)
    assert all(
        "TensorRT-LLM" not in message for _, message in codes(tmp_path, QWEN2_7B, "--tp", "8")
    )

"""SL315: llama.cpp's CUDA FlashAttention kernels (ggml-cuda/fattn.cu at 00a2d609).

Shapes are the published configs' numbers, written here by hand with their sources.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

from published_configs import LLAMA_3_8B

from shapelint.cli.main import main
from shapelint.hardware import engines
from shapelint.rules.sl315_llama_cpp_flash_attention import _unsupported

# Nemotron-4 340B (nvidia/Nemotron-4-340B: hidden 18432, 96 heads, 8 KV heads → head dim 192,
# values 192): llama.cpp has a 192-wide kernel only with 128-wide values.
NEMOTRON_4_340B = {
    "hidden_size": 18432,
    "num_attention_heads": 96,
    "num_key_value_heads": 8,
    "intermediate_size": 73728,
    "num_hidden_layers": 96,
    "vocab_size": 256000,
}


def run(path: Path, *argv: str) -> tuple[int, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(["check", str(path), "--no-cache", *argv], out, err)
    return code, out.getvalue() + err.getvalue()


def write(tmp_path: Path, config: dict[str, object]) -> Path:
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    return path


def test_nemotron_head_dim_192_has_no_kernel_when_llama_cpp_is_named(tmp_path: Path) -> None:
    path = write(tmp_path, NEMOTRON_4_340B)
    _, out = run(path, "--engine", "llama.cpp", "--mode", "decode", "--select", "SL315")
    assert "SL315" in out and "head dims 192/192" not in out and "head dim 192" in out
    assert "disables FlashAttention" in out and "llama.cpp 00a2d609" in out
    # Not a default engine: a run that names none does not hold configs to its kernel set.
    _, out = run(path, "--mode", "decode", "--select", "SL315")
    assert "SL315" not in out
    assert "llama.cpp" not in engines.all_default()


def test_common_head_dims_and_gqa_shapes(tmp_path: Path) -> None:
    _, out = run(write(tmp_path, LLAMA_3_8B), "--engine", "llama.cpp", "--select", "SL315")
    assert "SL315" not in out


def test_gqa_only_shapes() -> None:
    # fattn.cu: (192, 128) with a GQA ratio that is a multiple of 8, (320, 256) of 32,
    # (512, 512) and (576, 512) with the GQA optimisation (ratio ≥ 2).
    assert _unsupported(192, 128, 8) is None and _unsupported(192, 128, 16) is None
    assert "multiple of 8" in (_unsupported(192, 128, 4) or "")
    assert _unsupported(320, 256, 32) is None and _unsupported(320, 256, 16) is not None
    assert _unsupported(576, 512, 2) is None and _unsupported(576, 512, 1) is not None
    assert _unsupported(128, 128, 1) is None and _unsupported(160, 160, 1) is not None
    assert _unsupported(128, 64, 4) is not None  # values narrower than keys


def test_mla_models_are_not_checked(tmp_path: Path) -> None:
    deepseek = {
        **LLAMA_3_8B,
        "hidden_size": 7168,
        "num_attention_heads": 128,
        "num_key_value_heads": 128,
        "kv_lora_rank": 512,
        "q_lora_rank": 1536,
        "qk_nope_head_dim": 128,
        "qk_rope_head_dim": 64,
        "v_head_dim": 128,
    }
    _, out = run(write(tmp_path, deepseek), "--engine", "llama.cpp", "--select", "SL315")
    assert "SL315" not in out


def test_engines_lists_llama_cpp() -> None:
    out, err = io.StringIO(), io.StringIO()
    assert main(["engines", "--format", "json"], out, err) == 0
    assert "llama.cpp" in out.getvalue() and "SL315" in out.getvalue()

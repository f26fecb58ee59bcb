"""``--fp8-recipe`` (settings ``fp8-recipe``) and SL327: torchtitan's NVFP4 converter refuses
Linear layers whose dims are not multiples of 128 (nvfp4.py at b5bcd76c).

Shapes are the published configs' numbers, written here by hand with their sources; the
expected remainders are worked out in the comments, not with the rule's helpers.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import jsonschema
import pytest
from conftest import REPO
from published_configs import LLAMA_3_8B

from shapelint.cli.main import main

# microsoft/Phi-3-mini-4k-instruct config.json: 32064 = 250 * 128 + 64, so the output layer
# (3072 -> 32064) is refused; 3072 = 24 * 128 and 8192 = 64 * 128 are not.
PHI_3_MINI = {
    "architectures": ["Phi3ForCausalLM"],
    "hidden_size": 3072,
    "num_attention_heads": 32,
    "num_key_value_heads": 32,
    "intermediate_size": 8192,
    "num_hidden_layers": 32,
    "vocab_size": 32064,
}
# openlm-research/open_llama_3b config.json: 3200 = 25 * 128 but 8640 = 67 * 128 + 64, so
# feed_forward.w1/w3 (out 8640) and w2 (in 8640) are refused; vocab 32000 = 250 * 128 is not.
OPEN_LLAMA_3B = {
    "hidden_size": 3200,
    "num_attention_heads": 32,
    "intermediate_size": 8640,
    "num_hidden_layers": 26,
    "vocab_size": 32000,
}
# openai-community/gpt2 config.json: vocab 50257 is odd (not a multiple of 16 or 128).
GPT2 = {"n_embd": 768, "n_head": 12, "n_layer": 12, "n_positions": 1024, "vocab_size": 50257}

NVFP4 = ("--engine", "torchtitan", "--dtype", "fp8", "--fp8-recipe", "nvfp4")


def run(path: Path, *argv: str) -> tuple[int, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(["check", str(path), "--no-cache", *argv], out, err)
    return code, out.getvalue() + err.getvalue()


def write(tmp_path: Path, config: dict[str, object]) -> Path:
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    return path


def findings(path: Path, *argv: str) -> list[tuple[str, str]]:
    _, out = run(path, "--format", "json", "--select", "SL3", *argv)
    return [(f["code"], f["message"]) for f in json.loads(out)["findings"]]


def test_phi_3_mini_output_layer_is_refused_under_nvfp4(tmp_path: Path) -> None:
    (found,) = findings(write(tmp_path, PHI_3_MINI), *NVFP4)
    assert found[0] == "SL327"
    assert found[1].startswith(
        "NVFP4 requires out_features divisible by 128; got out_features=32064. NVFP4 cannot "
        "quantize this Linear; exclude it from the converter fqns: output (32064×3072)"
    )
    # Read at a commit: the 0.2.0 wheel the registry names has no NVFP4 recipe.
    assert found[1].endswith(
        "(refused by torchtitan b5bcd76c; the 0.2.0 release has no NVFP4 recipe)"
    )


def test_open_llama_3b_ffn_is_refused_under_nvfp4(tmp_path: Path) -> None:
    (found,) = findings(write(tmp_path, OPEN_LLAMA_3B), *NVFP4)
    assert found[0] == "SL327"
    assert "got out_features=8640" in found[1]
    assert "feed_forward.w1/w3 (8640×3200), feed_forward.w2 (3200×8640)" in found[1]
    assert "output" not in found[1] and "attention" not in found[1]


def test_llama_3_8b_is_accepted_under_nvfp4(tmp_path: Path) -> None:
    assert findings(write(tmp_path, LLAMA_3_8B), *NVFP4) == []


def test_other_recipes_and_unnamed_engines_are_not_held_to_128(tmp_path: Path) -> None:
    path = write(tmp_path, PHI_3_MINI)
    for recipe in ("delayed", "current", "mxfp8"):
        argv = ("--engine", "torchtitan", "--dtype", "fp8", "--fp8-recipe", recipe)
        assert findings(path, *argv) == []  # 32064 = 2004 * 16: Float8/MXFP8 convert it
    assert findings(path, "--dtype", "fp8", "--fp8-recipe", "nvfp4") == []  # not named
    # The recipe means nothing without dtype fp8.
    assert findings(path, "--engine", "torchtitan", "--fp8-recipe", "nvfp4") == []


def test_nvfp4_raises_where_float8_leaves_bf16(tmp_path: Path) -> None:
    path = write(tmp_path, GPT2)
    # Float8 and MXFP8 share module_filter_fn (% 16): the output layer stays in BF16 (SL314).
    codes = [c for c, _ in findings(path, "--engine", "torchtitan", "--dtype", "fp8")]
    assert codes == ["SL314"]
    mx = ("--engine", "torchtitan", "--dtype", "fp8", "--fp8-recipe", "mxfp8")
    assert [c for c, _ in findings(path, *mx)] == ["SL314"]
    # NVFP4's converter raises instead: 50257 = 392 * 128 + 81.
    (found,) = findings(path, *NVFP4)
    assert found[0] == "SL327" and "got out_features=50257" in found[1]


def test_recipe_from_settings(tmp_path: Path) -> None:
    path = write(tmp_path, PHI_3_MINI)
    settings = tmp_path / "pyproject.toml"
    settings.write_text(
        '[tool.shapelint]\ndtype = "fp8"\nfp8-recipe = "nvfp4"\nengines = ["torchtitan"]\n'
    )
    assert [c for c, _ in findings(path, "--config", str(settings))] == ["SL327"]
    settings.write_text('[tool.shapelint]\nfp8-recipe = "fp4"\n')
    code, out = run(path, "--config", str(settings))
    assert code == 2 and "fp8-recipe" in out and "Traceback" not in out


def test_unknown_recipe_is_a_usage_error(tmp_path: Path) -> None:
    code, out = run(write(tmp_path, PHI_3_MINI), "--fp8-recipe", "fp4")
    assert code == 2
    assert "invalid choice: 'fp4'" in out


def test_estimate_line_says_nvfp4_is_timed_at_fp8_rates(tmp_path: Path) -> None:
    _, out = run(write(tmp_path, PHI_3_MINI), *NVFP4)
    assert "fp8-recipe nvfp4 (timed at FP8 rates)" in out
    # OpenLLaMA 3B has findings under every recipe (head dim 100: SL102).
    _, out = run(write(tmp_path, OPEN_LLAMA_3B), *NVFP4[:4], "--fp8-recipe", "mxfp8")
    assert "fp8-recipe mxfp8" in out and "timed at FP8 rates" not in out
    _, out = run(write(tmp_path, OPEN_LLAMA_3B), "--fp8-recipe", "mxfp8")  # bf16: no recipe
    assert "Estimated for:" in out and "fp8-recipe" not in out


@pytest.mark.parametrize("fmt", ["text", "json", "github", "sarif"])
def test_nvfp4_finding_in_every_format(tmp_path: Path, fmt: str) -> None:
    code, out = run(write(tmp_path, PHI_3_MINI), *NVFP4, "--format", fmt, "--select", "SL3")
    assert code == 1 and "NVFP4 requires out_features divisible by 128" in out
    if fmt == "json":
        assert [f["code"] for f in json.loads(out)["findings"]] == ["SL327"]
    if fmt == "sarif":
        schema = json.loads(
            (REPO / "tests" / "data" / "sarif" / "sarif-schema-2.1.0.json").read_text()
        )
        jsonschema.Draft4Validator(schema).validate(json.loads(out))
    if fmt == "github":
        assert out.startswith("::error ")


def test_engines_lists_the_nvfp4_rule_under_torchtitan() -> None:
    out, err = io.StringIO(), io.StringIO()
    assert main(["engines", "--format", "json"], out, err) == 0
    row = next(e for e in json.loads(out.getvalue())["engines"] if e["name"] == "torchtitan")
    assert "SL327" in row["rules"] and "SL314" in row["rules"]


# Qwen/Qwen2.5-72B config.json: FFN 29568 (SwiGLU). Per GPU at tensor parallel 8: 3696 =
# 115 * 32 + 16 (refused under MXFP8) but 231 * 16 (SL324's % 16 accepts it); at 4: 7392 =
# 231 * 32.
QWEN25_72B = {
    "architectures": ["Qwen2ForCausalLM"],
    "hidden_size": 8192,
    "num_attention_heads": 64,
    "num_key_value_heads": 8,
    "intermediate_size": 29568,
    "num_hidden_layers": 80,
    "vocab_size": 152064,
    "hidden_act": "silu",
}
MXFP8 = ("--engine", "transformer-engine", "--dtype", "fp8", "--fp8-recipe", "mxfp8")


def test_qwen25_72b_mxfp8_gated_activation_at_tp8(tmp_path: Path) -> None:
    path = write(tmp_path, QWEN25_72B)
    (found,) = findings(path, *MXFP8, "--tp", "8")
    assert found[0] == "SL328"
    assert found[1].startswith(
        "Invalid input shape. Expected the last dimension to be divisible by 32, but got 3696"
    )
    assert findings(path, *MXFP8, "--tp", "4") == []
    for recipe in ("delayed", "current", "nvfp4"):
        argv = (*MXFP8[:4], "--fp8-recipe", recipe, "--tp", "8")
        assert findings(path, *argv) == []  # and SL324 accepts 3696 (a multiple of 16)


def test_mxfp8_gated_activation_skips_megatron_and_ungated(tmp_path: Path) -> None:
    # A Megatron-LM YAML with the same FFN: Megatron applies its own SwiGLU by default.
    megatron = tmp_path / "gpt.yaml"
    megatron.write_text(
        "language_model:\n  num_layers: 80\n  hidden_size: 8192\n  num_attention_heads: 64\n"
        "  ffn_hidden_size: 29568\nswiglu: true\nseq_length: 4096\n"
        "model_parallel:\n  tensor_model_parallel_size: 8\n"
    )
    _, out = run(megatron, "--format", "json", *MXFP8)
    (config,) = json.loads(out)["configs"]
    assert config["dialect"] == "megatron-lm" and config["dims"]["tp"] == 8
    assert [f["code"] for f in json.loads(out)["findings"] if f["code"] == "SL328"] == []
    # A non-gated MLP (GELU): TE's fused kernel for it has no block check.
    gelu = {**QWEN25_72B, "hidden_act": "gelu", "architectures": ["GPTNeoXForCausalLM"]}
    assert [c for c, _ in findings(write(tmp_path, gelu), *MXFP8, "--tp", "8")] == []

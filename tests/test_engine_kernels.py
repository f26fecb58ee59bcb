"""Kernel-side engine conditions: FlashAttention-4's head dims per GPU (SL320) and Transformer
Engine's attention backend choice (SL321, SL322), reproduced with real model families.

Head dims are read from each config's JSON here, independently of shapelint's dialects.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import jsonschema
import pytest
from conftest import REPO, parse_text

from shapelint.cli import main
from shapelint.lint import dialects
from shapelint.lint.model import Finding, Target
from shapelint.perf.gpus import lookup
from shapelint.rules import sl320_flash_attn4_head_dim as sl320
from shapelint.rules import sl321_te_attention_unfused as sl321
from shapelint.rules import sl322_te_no_attention_backend as sl322
from shapelint.rules.gpu_arch import compute_capability
from shapelint.rules.te_attention import choose

GEMMA2_2B = (
    "hf_config_json/pytorch+executorch/examples/mediatek/models/llm_models/weights/"
    "gemma2_2b_it/config.json"
)
DEEPSEEK_V3 = "deepseek-v3/inference/configs/config_671B.json"
# Nemotron-4 340B (NVIDIA model card): hidden 18432, 96 heads, 8 KV heads → head dim 192.
NEMOTRON_340B = (
    '{"hidden_size": 18432, "num_attention_heads": 96, "num_key_value_heads": 8,'
    ' "intermediate_size": 73728, "num_hidden_layers": 96, "vocab_size": 256000}\n'
)


def run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(list(argv), out, err)
    return code, out.getvalue(), err.getvalue()


def findings(text: str, module: object, gpu: str, **target: object) -> list[Finding]:
    config = dialects.extract(parse_text(text, "json", "config.json"))[0]
    check = module.check  # type: ignore[attr-defined]
    return list(check(config, Target(gpu=lookup(gpu), **target)))


def head_dim_of(data: dict[str, object]) -> int:
    explicit = data.get("head_dim")
    if isinstance(explicit, int):
        return explicit
    hidden, heads = data["hidden_size"], data["num_attention_heads"]
    assert isinstance(hidden, int) and isinstance(heads, int)
    return hidden // heads


# --- the GPU's compute capability ---------------------------------------------------------


def test_compute_capability_of_the_gpus_the_kernels_choose_by() -> None:
    assert compute_capability(lookup("A100-SXM-80GB")) == (8, 0)
    assert compute_capability(lookup("A10")) == (8, 6)
    assert compute_capability(lookup("L40S")) == (8, 9)
    assert compute_capability(lookup("H100-SXM")) == (9, 0)
    assert compute_capability(lookup("B200")) == (10, 0)
    assert compute_capability(lookup("MI300X")) is None


# --- SL320 FlashAttention-4 ----------------------------------------------------------------


def test_fa4_refuses_a_192_head_dim_on_blackwell_but_not_on_hopper() -> None:
    data = json.loads(NEMOTRON_340B)
    assert head_dim_of(data) == 192
    (f,) = findings(NEMOTRON_340B, sl320, "B200", engines=("flash-attn4",))
    assert "(head_dim, head_dim_v)=(192, 192) is not supported on SM100/SM110" in f.message
    assert f.severity == "error" and "FlashAttention-4 4.0.0.beta27" in f.message
    assert findings(NEMOTRON_340B, sl320, "H100-SXM", engines=("flash-attn4",)) == []
    # Not named: not checked.
    assert findings(NEMOTRON_340B, sl320, "B200") == []


def test_fa4_accepts_gemma2_and_deepseek_mla_on_hopper_and_blackwell(corpus: Path) -> None:
    gemma = (corpus / GEMMA2_2B).read_text()
    assert head_dim_of(json.loads(gemma)) == 256
    deepseek = corpus / DEEPSEEK_V3
    for gpu in ("H100-SXM", "B200"):
        assert findings(gemma, sl320, gpu, engines=("flash-attn4",)) == []
        code, out, _ = run(
            str(deepseek), "--gpu", gpu, "--engine", "fa4", "--select", "SL320", "-q"
        )
        assert code == 0, out


def test_fa4_head_dim_sets_per_compute_capability() -> None:
    refusal = sl320.refusal
    assert refusal(256, 256, 9, 2) is None and refusal(264, 264, 9, 2) is not None
    assert refusal(100, 100, 9, 2) is not None  # not a multiple of 8
    assert refusal(72, 72, 9, 1) is not None  # FP8: multiples of 16
    assert refusal(128, 128, 10, 2) is None and refusal(160, 160, 10, 2) is not None
    assert refusal(192, 128, 10, 2) is None and refusal(64, 512, 10, 2) is None
    assert refusal(256, 256, 10, 2) is None and refusal(256, 128, 10, 2) is not None
    assert refusal(512, 512, 8, 2) is None  # no check on sm80


# --- SL321 / SL322 Transformer Engine --------------------------------------------------------


@pytest.mark.parametrize(
    ("gpu", "unfused"),
    [("A10", True), ("L40S", True), ("A100-SXM-80GB", False), ("H100-SXM", False), ("B200", False)],
)
def test_te_trains_gemma2_head_dim_256_unfused_on_sm86_and_sm89(
    corpus: Path, gpu: str, unfused: bool
) -> None:
    """FlashAttention 2 backward above head dim 192 needs sm80/sm90 (flash-attention #277),
    and cuDNN trains head dims above 128 only on sm90: TE falls back to unfused attention."""
    text = (corpus / GEMMA2_2B).read_text()
    assert head_dim_of(json.loads(text)) == 256
    found = findings(text, sl321, gpu, engines=("transformer-engine",))
    assert bool(found) == unfused, [f.message for f in found]
    if unfused:
        (f,) = found
        assert "runs UnfusedDotProductAttention" in f.message and f.severity == "warning"
        assert "padded head dim 256 > 192 needs sm80/sm90/sm100/sm120" in f.message
        assert "estimated +" in f.message and "Transformer Engine 2.20.0.dev0" in f.message
    # Inference is not this rule's business.
    assert findings(text, sl321, gpu, engines=("transformer-engine",), mode="prefill") == []


def test_te_has_no_backend_under_context_parallelism(corpus: Path) -> None:
    text = (corpus / GEMMA2_2B).read_text()
    (f,) = findings(text, sl322, "L40S", engines=("transformer-engine",), cp=2)
    assert f.severity == "error"
    assert "No dot product attention backend is available for the provided inputs" in f.message
    assert findings(text, sl321, "L40S", engines=("transformer-engine",), cp=2) == []
    assert findings(text, sl322, "L40S", engines=("transformer-engine",)) == []
    assert findings(text, sl322, "H100-SXM", engines=("transformer-engine",), cp=2) == []


def test_te_on_hopper_says_flash_attention_3_would_raise(corpus: Path) -> None:
    """The DBRX test config's head dim 12: TE's FlashAttention 3 filter lets it through, the
    kernel raises; without flash-attn 3 TE runs unfused."""
    small = next(corpus.rglob("dbrx_pretrain/configs/small_scale.json"))
    data = json.loads(small.read_text())
    assert data["d_model"] // data["n_heads"] == 12
    code, out, _ = run(str(small), "--engine", "te", "--select", "SL321", "--format", "json")
    assert code == 1
    (f,) = json.loads(out)["findings"]
    assert "head dim 12 on sm90" in f["message"]
    assert "selects FlashAttention 3 instead, which raises" in f["message"]


def test_te_backend_choice_follows_the_selector() -> None:
    # DeepSeek MLA (192, 128): FlashAttention 3 on sm90, cuDNN 9.11+ or FlashAttention 4 on sm100.
    assert "FlashAttention 3" in choose(192, 128, 128, 128, (9, 0), 1).available
    assert "cuDNN FusedAttention" in choose(192, 128, 128, 128, (10, 0), 1).available
    # Head dim 512: nothing fused on any GPU.
    for cc in ((8, 0), (8, 9), (9, 0), (10, 0)):
        assert choose(512, 512, 8, 8, cc, 1).available == ()
    # Context parallelism takes FlashAttention 4 away.
    assert "FlashAttention 4" not in choose(128, 128, 8, 8, (10, 0), 2).available


@pytest.mark.parametrize("fmt", ["text", "json", "github", "sarif"])
def test_kernel_rules_in_every_format(corpus: Path, fmt: str) -> None:
    path = str(corpus / GEMMA2_2B)
    argv = [path, "--gpu", "L40S", "--engine", "te", "--select", "SL32", "--format", fmt]
    code, out, _ = run(*argv, "--cp", "2")
    assert code == 1 and "SL322" in out
    if fmt == "json":
        assert [f["code"] for f in json.loads(out)["findings"]] == ["SL322"]
    if fmt == "sarif":
        schema = json.loads(
            (REPO / "tests" / "data" / "sarif" / "sarif-schema-2.1.0.json").read_text()
        )
        jsonschema.Draft4Validator(schema).validate(json.loads(out))
    if fmt == "github":
        assert out.startswith("::error ")
    if fmt == "text":
        assert "engines transformer-engine, cp 2" in out


def test_engines_command_lists_the_kernels() -> None:
    code, out, _ = run("engines", "--format", "json")
    assert code == 0
    rows = {r["name"]: r for r in json.loads(out)["engines"]}
    assert rows["flash-attn4"]["rules"] == ["SL320"] and rows["flash-attn4"]["default"] is False
    assert rows["transformer-engine"]["rules"] == ["SL321", "SL322"]
    assert rows["transformer-engine"]["default"] is True

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

from shapelint import dialects
from shapelint.cli.main import main
from shapelint.core.model import Dim, Finding, Target
from shapelint.hardware.gpus import lookup
from shapelint.perf.te_attention import choose, fa4_refusal
from shapelint.rules import sl320_flash_attn4_head_dim as sl320
from shapelint.rules import sl321_te_attention_unfused as sl321
from shapelint.rules import sl322_te_no_attention_backend as sl322
from shapelint.rules import sl324_te_fp8_gemm_dims as sl324

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
    assert lookup("A100-SXM-80GB").compute_capability == (8, 0)
    assert lookup("A10").compute_capability == (8, 6)
    assert lookup("L40S").compute_capability == (8, 9)
    assert lookup("H100-SXM").compute_capability == (9, 0)
    assert lookup("B200").compute_capability == (10, 0)
    assert lookup("MI300X").compute_capability is None


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
    refusal = fa4_refusal
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
    assert rows["transformer-engine"]["rules"] == [
        "SL321",
        "SL322",
        "SL324",
        "SL328",
        "SL329",
        "SL330",
        "SL332",
    ]
    assert rows["transformer-engine"]["default"] is True


# --- rotary dims and SL323 FlashAttention's fused rotary -------------------------------------

PYTHIA_2_8B = "gpt-neox/configs/pythia/2-8B.yml"
PYTHIA_1B = "gpt-neox/configs/pythia/1B.yml"
NEOX_20B = "gpt-neox/configs/20B.yml"
PHI4_MINI = (
    "hf_config_json/pytorch+executorch/examples/mediatek/models/llm_models/weights/"
    "phi-4-mini-reasoning/config.json"
)
GLM45 = "hf_config_json/alibaba+rtp-llm/rtp_llm/test/model_test/fake_test/testdata/glm45/tokenizer/config.json"
MEGATRON_GPT = "megatron-lm/examples/gpt3/gpt_config.yaml"


def config_json(path: Path, *argv: str) -> list[dict[str, object]]:
    code, out, err = run(str(path), "--format", "json", "-q", *argv)
    assert code in (0, 1), err
    configs = json.loads(out)["configs"]
    assert isinstance(configs, list)
    return configs


def rotary_truth(data: dict[str, object], fraction_key: str) -> int:
    """int(head dim × fraction), from the file's own keys."""
    hidden = data.get("hidden_size", data.get("hidden-size"))
    heads = data.get("num_attention_heads", data.get("num-attention-heads"))
    assert isinstance(hidden, int) and isinstance(heads, int)
    head = data.get("head_dim") or data.get("kv_channels") or hidden // heads
    fraction = data[fraction_key]
    assert isinstance(head, int) and isinstance(fraction, int | float)
    return int(head * fraction)


@pytest.mark.parametrize(
    ("rel", "fraction_key", "source"),
    [
        (PYTHIA_2_8B, "rotary_pct", "gpt-neox"),
        (NEOX_20B, "rotary_pct", "gpt-neox"),
        (PHI4_MINI, "partial_rotary_factor", "hf"),
        (GLM45, "partial_rotary_factor", "hf"),
    ],
)
def test_rotary_dim_is_read_from_each_dialects_fraction(
    corpus: Path, rel: str, fraction_key: str, source: str
) -> None:
    import yaml

    text = (corpus / rel).read_text()
    data = json.loads(text) if rel.endswith(".json") else yaml.safe_load(text)
    (config,) = config_json(corpus / rel)
    dims, sources = config["dims"], config["sources"]
    assert isinstance(dims, dict) and isinstance(sources, dict)
    assert dims["rotary_dim"] == rotary_truth(data, fraction_key)
    assert sources["rotary_dim"] == source


def test_megatron_rotary_percent_applies_to_rope_models(corpus: Path) -> None:
    import yaml

    data = yaml.safe_load((corpus / MEGATRON_GPT).read_text())
    assert data["position_embedding_type"] == "rope"
    model = data["language_model"]
    head = model.get("kv_channels") or model["hidden_size"] // model["num_attention_heads"]
    (config,) = config_json(corpus / MEGATRON_GPT)
    dims = config["dims"]
    assert isinstance(dims, dict)
    assert dims["rotary_dim"] == int(head * data["rotary_percent"])


def test_a_learned_position_neox_config_has_no_rotary_dim() -> None:
    text = '{"hidden_size": 768, "num_attention_heads": 12, "num_layers": 12,\n "pos_emb": "learned", "rotary_pct": 0.25}\n'
    config = dialects.extract(parse_text(text, "yaml", "c.yml"))[0]
    assert config.get(Dim.ROTARY_DIM) is None


def test_fused_rotary_refuses_pythia_2_8b_in_decode(corpus: Path) -> None:
    import yaml

    for rel, refused in ((PYTHIA_2_8B, True), (NEOX_20B, True), (PYTHIA_1B, False)):
        data = yaml.safe_load((corpus / rel).read_text())
        rotary = rotary_truth(data, "rotary_pct")
        assert (rotary % 16 != 0) == refused, (rel, rotary)
        argv = ("--engine", "fa2", "--engine", "fa3", "--mode", "decode", "--select", "SL323")
        code, out, _ = run(str(corpus / rel), *argv, "--format", "json")
        found = json.loads(out)["findings"]
        assert (code == 1) == refused and len(found) == int(refused), out
        if refused:
            (f,) = found
            assert f"rotary dim int(head_dim × rotary_pct) = {rotary}" in f["message"]
            assert "Only rotary dimensions divisible by 16" in f["message"]
            assert "FlashAttention-2 2.8.4, FlashAttention-3 2.8.4" in f["message"]
        # Training, or no kernel named: nothing.
        assert run(str(corpus / rel), "--engine", "fa2", "--select", "SL323", "-q")[0] == 0


# --- SL324 Transformer Engine FP8 Linear dims --------------------------------------------------

QWEN25_72B = (
    '{"architectures": ["Qwen2ForCausalLM"], "hidden_size": 8192, "num_attention_heads": 64,'
    ' "num_key_value_heads": 8, "intermediate_size": 29568, "num_hidden_layers": 80,'
    ' "vocab_size": 152064, "hidden_act": "silu", "max_position_embeddings": 32768}\n'
)


def test_te_fp8_refuses_qwen25_72b_ffn_at_tp16() -> None:
    """Qwen2.5-72B (model card config): intermediate 29568 splits into 1848 per GPU at tensor
    parallel 16, not a multiple of 16; at 8 it is 3696 = 16 × 231."""
    data = json.loads(QWEN25_72B)
    ffn = data["intermediate_size"]
    assert (ffn // 16) % 16 != 0 and (ffn // 8) % 16 == 0
    te = ("transformer-engine",)
    (f,) = findings(QWEN25_72B, sl324, "H100-SXM", dtype="fp8", tp=16, engines=te)
    assert f.severity == "error" and f.key == "intermediate_size"
    assert f"linear_fc2 weight 8192×{ffn // 16}" in f.message
    assert "FP8 execution requires the product of all dimensions" in f.message
    assert findings(QWEN25_72B, sl324, "H100-SXM", dtype="fp8", tp=8, engines=te) == []
    # BF16 training or inference: no FP8 GEMMs.
    assert findings(QWEN25_72B, sl324, "H100-SXM", tp=16, engines=te) == []
    fp8_prefill = findings(QWEN25_72B, sl324, "H100-SXM", dtype="fp8", tp=16, mode="prefill")
    assert fp8_prefill == []


def test_te_fp8_refuses_a_token_count_not_a_multiple_of_8() -> None:
    te = ("transformer-engine",)
    (f,) = findings(QWEN25_72B, sl324, "H100-SXM", dtype="fp8", seq_len=2047, engines=te)
    assert "micro-batch 1 × sequence 2047 = 2047 tokens" in f.message
    assert findings(QWEN25_72B, sl324, "H100-SXM", dtype="fp8", seq_len=2048, engines=te) == []


# --- Megatron-LM runs on Transformer Engine unless transformer_impl says otherwise ------------


def test_megatron_configs_run_on_transformer_engine_unless_local(corpus: Path) -> None:
    import yaml

    from shapelint.dialects.engines import default_engines

    local = corpus / "megatron-lm/examples/gpt3/gpt_config.yaml"
    assert yaml.safe_load(local.read_text())["transformer_impl"] == "local"
    flags = next(
        p
        for p in corpus.rglob("megatron-lm/tests/functional_tests/test_cases/*/*/model_config.yaml")
        if "--transformer-impl: transformer_engine" in p.read_text()
    )
    for path, engines in ((local, ("megatron",)), (flags, ("megatron", "transformer-engine"))):
        fmt = "yaml"
        configs = dialects.extract(parse_text(path.read_text(), fmt, str(path)))
        assert configs and all(c.dialect == "megatron-lm" for c in configs), path
        assert {default_engines(c) for c in configs} == {engines}, path

"""TensorRT-LLM (named only): SL301's heads vs tensor parallel (``Attention.__init__`` at
c6d3bb2a), SL326's head size vs the MMHA decoder kernels (``AttentionOp::initialize`` at
00dbe288) and the KV-cache kernels' vector width (2340c776).

Shapes are published configs' numbers, written by hand with their sources.
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


def run(path: Path, *argv: str) -> tuple[int, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(["check", str(path), "--no-cache", *argv], out, err)
    return code, out.getvalue() + err.getvalue()


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


# The head sizes of TensorRT-LLM's MMHA decoder kernels (decoderMaskedMultiheadAttention.cu at
# 0ab9d17a: MMHA_SUPPORTED_HEAD_SIZES); AttentionOp::initialize (attentionOp.cpp at 00dbe288)
# refuses any other head size but 72, MLA aside, before any prefill or decode step.
MMHA = {32, 48, 64, 80, 96, 104, 112, 128, 144, 160, 192, 224, 256}
# H2O-Danube3 4B (h2oai/h2o-danube3-4b-chat model card, "Model Architecture": n_embd 3840,
# n_heads 32, n_query_groups 8, 24 layers, vocab 32000; k_proj 3840 -> 960 = 8 x 120,
# gate/up 3840 -> 10240), in the Llama keys of its config.json.
DANUBE3_4B = {
    "architectures": ["LlamaForCausalLM"],
    "hidden_size": 3840,
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
    "intermediate_size": 10240,
    "num_hidden_layers": 24,
    "vocab_size": 32000,
}


def test_head_size_without_an_mmha_kernel(tmp_path: Path) -> None:
    # OpenLLaMA 3B: 3200 / 32 = 100, not a decoder kernel's head size (nor a multiple of 8).
    head = OPEN_LLAMA_3B["hidden_size"] // OPEN_LLAMA_3B["num_attention_heads"]
    assert head == 100 and head not in MMHA
    (finding,) = codes(tmp_path, OPEN_LLAMA_3B, "--engine", "tensorrt-llm")
    assert finding[0] == "SL326" and "Head size 100 is not supported by MMHA" in finding[1]
    # 100 % 8 == 4 in bf16 (16-bit: 8 elements per 16 bytes).
    assert "nor is 100 a multiple of 8" in finding[1] and "read at 00dbe288" in finding[1]
    # In fp32 a vector holds 4 elements and 100 % 4 == 0, but the MMHA check does not look at
    # the dtype: still refused.
    (finding,) = codes(tmp_path, OPEN_LLAMA_3B, "--engine", "tensorrt-llm", "--dtype", "fp32")
    assert finding[0] == "SL326" and "Head size 100 is not supported by MMHA" in finding[1]
    assert "a multiple of" not in finding[1]


@pytest.mark.parametrize("gpu", ["H100-SXM", "A100-SXM-80GB", "L40S", "B200", "V100-SXM2"])
@pytest.mark.parametrize("mode", ["prefill", "decode"])
def test_danube3_head_size_120_is_refused(tmp_path: Path, gpu: str, mode: str) -> None:
    """A multiple of 8 without an MMHA kernel: refused on every GPU, in prefill as in decode
    (the check runs when the attention op initializes)."""
    head = DANUBE3_4B["hidden_size"] // DANUBE3_4B["num_attention_heads"]  # type: ignore[operator]
    assert head == 120 and head % 8 == 0 and head not in MMHA
    found = codes(tmp_path, DANUBE3_4B, "--engine", "tensorrt-llm", "--gpu", gpu, "--mode", mode)
    (finding,) = [f for f in found if f[0] == "SL326"]
    assert "Head size 120 is not supported by MMHA" in finding[1]
    assert "a multiple of" not in finding[1]
    # A refused head size is not also reported as slow (SL331).
    assert all(code != "SL331" for code, _ in found)


def test_head_sizes_the_attention_op_takes(tmp_path: Path) -> None:
    """Every MMHA head size, and 72 (let through for its FMHA kernels), passes; 40 has context
    FMHA kernels but no MMHA kernel, and is refused."""
    for head in sorted(MMHA | {72, 40}):
        config = {**LLAMA_3_8B, "hidden_size": 32 * head, "num_attention_heads": 32}
        found = [code for code, _ in codes(tmp_path, config, "--engine", "tensorrt-llm")]
        assert ("SL326" in found) == (head == 40), head


def test_only_when_named(tmp_path: Path) -> None:
    found = codes(tmp_path, OPEN_LLAMA_3B)
    assert all(code != "SL326" for code, _ in found)
    assert all(
        "TensorRT-LLM" not in message for _, message in codes(tmp_path, QWEN2_7B, "--tp", "8")
    )


# Mixtral 8x7B (mistralai/Mixtral-8x7B-v0.1 config.json): 8 experts.
MIXTRAL = {
    "hidden_size": 4096,
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
    "intermediate_size": 14336,
    "num_hidden_layers": 32,
    "num_local_experts": 8,
    "num_experts_per_tok": 2,
    "vocab_size": 32000,
}


def test_expert_parallel_must_divide_tensor_parallel(tmp_path: Path) -> None:
    path = tmp_path / "config.json"
    path.write_text(json.dumps(MIXTRAL))
    # tp 8, ep 3: Mapping takes moe_tp_size = 8 // 3 = 2, and 2 * 3 * 1 = 6 != 8.
    code, out = run(path, "--engine", "tensorrt-llm", "--tp", "8", "--ep", "3", "--select", "SL3")
    assert code == 1
    assert (
        "SL317 [error] tp_size must equal to moe_tp_size * moe_ep_size * moe_cluster_size, "
        "but got 8 != 2 * 3 * 1" in out
    )
    # ep 16 > tp 8: moe_tp_size = 8 // 16 = 0.
    _, out = run(path, "--engine", "tensorrt-llm", "--tp", "8", "--ep", "16", "--select", "SL317")
    assert "but got 8 != 0 * 16 * 1" in out
    _, out = run(path, "--engine", "tensorrt-llm", "--tp", "8", "--ep", "4", "--select", "SL317")
    assert "SL317" not in out
    # Not named: nothing (Megatron and vLLM size expert parallelism on its own).
    _, out = run(path, "--tp", "8", "--ep", "3", "--select", "SL317")
    assert "SL317" not in out


def test_dense_model_is_not_checked_for_expert_parallel(tmp_path: Path) -> None:
    path = tmp_path / "config.json"
    path.write_text(json.dumps(QWEN2_7B))
    _, out = run(path, "--engine", "tensorrt-llm", "--tp", "4", "--ep", "3", "--select", "SL317")
    assert "SL317" not in out


@pytest.mark.parametrize("fmt", ["text", "json", "github", "sarif"])
def test_moe_parallel_finding_in_every_format(tmp_path: Path, fmt: str) -> None:
    path = tmp_path / "config.json"
    path.write_text(json.dumps(MIXTRAL))
    argv = ("--engine", "tensorrt-llm", "--tp", "8", "--ep", "3", "--select", "SL317")
    code, out = run(path, *argv, "--format", fmt)
    assert code == 1 and "tp_size must equal to moe_tp_size" in out
    if fmt == "json":
        assert [f["code"] for f in json.loads(out)["findings"]] == ["SL317"]
    if fmt == "sarif":
        schema = json.loads(
            (REPO / "tests" / "data" / "sarif" / "sarif-schema-2.1.0.json").read_text()
        )
        jsonschema.Draft4Validator(schema).validate(json.loads(out))
    if fmt == "github":
        assert out.startswith("::error ")


def test_engines_lists_the_moe_parallel_rule() -> None:
    out, err = io.StringIO(), io.StringIO()
    assert main(["engines", "--format", "json"], out, err) == 0
    row = next(e for e in json.loads(out.getvalue())["engines"] if e["name"] == "tensorrt-llm")
    assert "SL317" in row["rules"] and "SL326" in row["rules"]


# --- SL331 context FMHA ------------------------------------------------------------------------

# MPT-30B (mosaicml/mpt-30b config.json): d_model 7168, 64 heads, 48 layers, expansion_ratio 4,
# vocab 50432 (the HF MPT config's own keys).
MPT_30B = {
    "architectures": ["MPTForCausalLM"],
    "model_type": "mpt",
    "d_model": 7168,
    "n_heads": 64,
    "n_layers": 48,
    "expansion_ratio": 4,
    "vocab_size": 50432,
}
# TensorRT-LLM's context FMHA head sizes, fp16/bf16, sm80/86/89/90 (cubin/fmha_cubin.h at
# 03cdd5a6: the EXCLUDE_SM_80/86/89/90 cubin declarations), and the head sizes its decoder
# kernels take (decoderMaskedMultiheadAttention.cu at 0ab9d17a, MMHA_SUPPORTED_HEAD_SIZES);
# AttentionOp::initialize (00dbe288) refuses any other head size but 72.
FMHA_TABLE = {16, 32, 40, 48, 64, 72, 80, 96, 104, 128, 160, 192, 256}


@pytest.mark.parametrize(
    ("gpu", "sm"),
    [("H100-SXM", "sm90"), ("A100-SXM-80GB", "sm80"), ("A10", "sm86"), ("L40S", "sm89")],
)
def test_context_fmha_falls_back_for_mpt_30b(tmp_path: Path, gpu: str, sm: str) -> None:
    head = MPT_30B["d_model"] // MPT_30B["n_heads"]  # type: ignore[operator]
    assert head == 112 and head in MMHA and head not in FMHA_TABLE
    found = codes(tmp_path, MPT_30B, "--engine", "tensorrt-llm", "--gpu", gpu)
    (finding,) = [f for f in found if f[0] == "SL331"]
    assert f"no context FMHA kernel for head size 112 on {sm} ({gpu};" in finding[1]
    assert (
        "'Fall back to unfused MHA'" in finding[1] and "kernel table read at 03cdd5a6" in finding[1]
    )
    # The HF MPT config states its FFN as expansion_ratio (4 × d_model): the step is timed.
    assert f"% prefill time on {gpu} at seq" in finding[1] and "estimated +" in finding[1]


def test_context_fmha_estimate_when_the_step_can_be_timed(tmp_path: Path) -> None:
    """MPT-30B's shape in Llama keys, its FFN stated (expansion_ratio 4: 4 × 7168 = 28672):
    the prefill with unfused attention against the same prefill with a fused kernel."""
    mpt = {
        "hidden_size": 7168,
        "num_attention_heads": 64,
        "num_hidden_layers": 48,
        "intermediate_size": 4 * 7168,
        "vocab_size": 50432,
    }
    (finding,) = codes(tmp_path, mpt, "--engine", "tensorrt-llm", "--select", "SL331")
    assert "estimated +" in finding[1] and "% prefill time on H100-SXM at seq" in finding[1]


def test_context_fmha_silent_where_a_kernel_exists_or_the_table_was_not_read(
    tmp_path: Path,
) -> None:
    # Llama 3 8B: head size 128 has a context kernel on every GPU read.
    for gpu in ("H100-SXM", "A100-SXM-80GB", "A10", "L40S"):
        assert codes(tmp_path, LLAMA_3_8B, "--engine", "tensorrt-llm", "--gpu", gpu) == []
    # Blackwell runs trtllm-gen kernels (table not read); Volta has no FMHA v2 runner.
    for gpu in ("B200", "V100-SXM2"):
        found = codes(tmp_path, MPT_30B, "--engine", "tensorrt-llm", "--gpu", gpu)
        assert all(code != "SL331" for code, _ in found)
    # Not named: TensorRT-LLM is checked only when named.
    assert all(code != "SL331" for code, _ in codes(tmp_path, MPT_30B))
    # fp32 has no FMHA at all (every head size runs unfused): not this rule's report.
    found = codes(tmp_path, MPT_30B, "--engine", "tensorrt-llm", "--dtype", "fp32")
    assert all(code != "SL331" for code, _ in found)
    # OpenLLaMA 3B's head size 100 is refused (SL326; MMHA has no kernel either), not slow.
    found = codes(tmp_path, OPEN_LLAMA_3B, "--engine", "tensorrt-llm")
    assert [code for code, _ in found] == ["SL326"]


def test_context_fmha_kernel_match_is_bitwise() -> None:
    """checkIfKernelExist matches with (kernel_hash & id) == id: a head size whose bits are all
    set in some kernel's head size passes (16 ⊂ 48); among the head sizes TensorRT-LLM takes
    that is exactly the table, leaving 112, 144 and 224."""
    from shapelint.rules.sl331_trtllm_context_fmha import fmha_supported

    assert fmha_supported(16, 16) and fmha_supported(8, 8)  # 8 = 0b1000 ⊂ 40 = 0b101000
    taken = MMHA | {72}
    assert {d for d in taken if not fmha_supported(d, d)} == taken - FMHA_TABLE == {112, 144, 224}
    assert fmha_supported(192, 128)  # DeepSeek's MLA context kernels


def test_engines_lists_the_context_fmha_rule() -> None:
    out, err = io.StringIO(), io.StringIO()
    assert main(["engines", "--format", "json"], out, err) == 0
    row = next(e for e in json.loads(out.getvalue())["engines"] if e["name"] == "tensorrt-llm")
    assert "SL331" in row["rules"]


# AttentionOp::initialize (attentionOp.cpp at 00dbe288d2a7, `if (mIsMLAEnabled)`): MLA only with
# kv_lora_rank 512 and qk_rope_head_dim 64, "MLA(Deepseek v2) only support fixed ...".
MLA_RANK, MLA_ROPE = 512, 64
# DeepSeek-V3 (deepseek-ai/DeepSeek-V3 config.json).
DEEPSEEK_V3 = {
    "architectures": ["DeepseekV3ForCausalLM"],
    "hidden_size": 7168,
    "num_attention_heads": 128,
    "num_key_value_heads": 128,
    "q_lora_rank": 1536,
    "kv_lora_rank": 512,
    "qk_nope_head_dim": 128,
    "qk_rope_head_dim": 64,
    "v_head_dim": 128,
    "intermediate_size": 18432,
    "moe_intermediate_size": 2048,
    "n_routed_experts": 256,
    "num_experts_per_tok": 8,
    "num_hidden_layers": 61,
    "vocab_size": 129280,
}
# MiniCPM3-4B (openbmb/MiniCPM3-4B config.json, as two stored copies in the public-code index
# repeat it; the Hub file was not reachable from here): MLA with kv_lora_rank 256, rope 32.
MINICPM3_4B = {
    "architectures": ["MiniCPM3ForCausalLM"],
    "model_type": "minicpm3",
    "hidden_size": 2560,
    "num_hidden_layers": 62,
    "num_attention_heads": 40,
    "num_key_value_heads": 40,
    "intermediate_size": 6400,
    "vocab_size": 73448,
    "q_lora_rank": 768,
    "kv_lora_rank": 256,
    "qk_nope_head_dim": 64,
    "qk_rope_head_dim": 32,
    "max_position_embeddings": 32768,
}


def test_mla_takes_only_deepseeks_rank_and_rope_dim(tmp_path: Path) -> None:
    assert (DEEPSEEK_V3["kv_lora_rank"], DEEPSEEK_V3["qk_rope_head_dim"]) == (MLA_RANK, MLA_ROPE)
    for tp in ("1", "8", "16"):
        assert codes(tmp_path, DEEPSEEK_V3, "--engine", "trtllm", "--tp", tp) == []
    assert (MINICPM3_4B["kv_lora_rank"], MINICPM3_4B["qk_rope_head_dim"]) != (MLA_RANK, MLA_ROPE)
    for gpu in ("H100", "A100", "B200"):
        (finding,) = codes(tmp_path, MINICPM3_4B, "--engine", "trtllm", "--gpu", gpu)
        assert finding[0] == "SL326"
        assert "only support fixed kv_lora_rank(512) and fixed qk_rope_head_dim(64)" in finding[1]
        assert "kv_lora_rank 256, qk_rope_head_dim 32" in finding[1]
    # Not named: no finding.
    assert codes(tmp_path, MINICPM3_4B, "--engine", "vllm") == []


def test_mla_check_needs_only_one_known_wrong_value(tmp_path: Path) -> None:
    # Hand-made DeepSeek-V3 variants (not released models): either value wrong is refused
    # (the check is an `&&` of both); an unknown one is not guessed.
    rope_only = {k: v for k, v in DEEPSEEK_V3.items() if k != "kv_lora_rank"}
    assert codes(tmp_path, {**rope_only, "qk_rope_head_dim": 32}, "--engine", "trtllm") != []
    assert codes(tmp_path, rope_only, "--engine", "trtllm") == []
    (finding,) = codes(tmp_path, {**DEEPSEEK_V3, "kv_lora_rank": 256}, "--engine", "trtllm")
    assert "kv_lora_rank 256, qk_rope_head_dim 64" in finding[1]

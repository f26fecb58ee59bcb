"""Inference paths and MoE/MLA shapes: skinny GEMMs, KV-cache reads, active experts, shared
experts, leading dense layers, multi-head latent attention. Expected values by hand."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import configs_of

from shapelint.core.model import Dim, ModelConfig, Target, Value
from shapelint.core.source import Span
from shapelint.hardware.gpus import lookup
from shapelint.perf.estimate import step_time
from shapelint.perf.gemm import gemm_time
from shapelint.perf.workload import Gemm, active_experts, step_gemms

SPAN = Span("config.json", 1, 1, 1, 2, 0, 1)
H100, A100 = lookup("h100"), lookup("a100")
CORPUS = Path(__file__).resolve().parents[2] / ".." / "shared" / "corpus"


def config(**dims: int) -> ModelConfig:
    return ModelConfig(
        "test", "config.json", "test", {Dim(k): Value(v, k, SPAN) for k, v in dims.items()}, True
    )


QWEN25_7B = dict(hidden=3584, heads=28, kv_heads=4, layers=28, ffn=18944, vocab=152064)
# Mixtral-8x7B (mistralai/Mixtral-8x7B-v0.1 config.json): 8 experts of width 14336, top-2.
MIXTRAL = dict(
    hidden=4096, heads=32, kv_heads=8, layers=32, moe_ffn=14336, experts=8,
    experts_per_token=2, vocab=32000,
)  # fmt: skip
# DeepSeek-V3 (deepseek-ai/DeepSeek-V3 inference/configs/config_671B.json).
DEEPSEEK_V3 = dict(
    hidden=7168, heads=128, layers=61, ffn=18432, moe_ffn=2048, experts=256,
    experts_per_token=8, shared_experts=1, dense_layers=3, q_lora_rank=1536,
    kv_lora_rank=512, head_dim=192, rope_head_dim=64, v_head_dim=128, vocab=129280,
)  # fmt: skip


def by_name(gemms: list[Gemm], pass_: str = "fwd") -> dict[str, Gemm]:
    return {g.name: g for g in gemms if g.pass_ == pass_}


@pytest.mark.parametrize("gpu", [A100, H100])
def test_decode_at_micro_batch_1_is_memory_bound(gpu: object) -> None:
    target = Target(gpu=gpu, mode="decode", micro_batch=1, seq_len=4096)  # type: ignore[arg-type]
    step = step_time(config(**QWEN25_7B), target)
    assert step.gemms and all(e.time.bound == "memory" for e in step.gemms)


def test_skinny_gemm_reads_its_weights_once() -> None:
    # M = 1, 4096×4096 bf16: 32 MiB of weights at 3350 GB/s × Hopper's measured streaming
    # fraction 0.852 = 11.8 µs, plus the 5.7 µs launch and the 1 µs split-K reduction (32
    # column tiles on 132 SMs: K split 4 ways).
    t = gemm_time(1, 4096, 4096, gpu=H100, dtype="bf16")
    assert t.bound == "memory" and t.split_k == 4
    expected = 5.7e-6 + 1.0e-6 + (4096 * 4096 + 2 * 4096) * 2 / (3350e9 * 0.852)
    assert t.time_s == pytest.approx(expected, rel=1e-6)
    # M = 64 stays memory-bound; M = 512 is compute-bound (intensity ~ 410 FLOP/B).
    assert gemm_time(64, 4096, 4096, gpu=H100, dtype="bf16").bound == "memory"
    assert gemm_time(512, 4096, 4096, gpu=H100, dtype="bf16").bound == "compute"


def test_decode_attention_reads_the_kv_cache() -> None:
    t4k = Target(gpu=H100, mode="decode", micro_batch=1, seq_len=4096)
    t32k = Target(gpu=H100, mode="decode", micro_batch=1, seq_len=32768)
    s4 = by_name(step_gemms(config(**QWEN25_7B), t4k))["attn_scores"]
    s32 = by_name(step_gemms(config(**QWEN25_7B), t32k))["attn_scores"]
    # One K cache per KV head: 4 heads × ctx × 128 (the 7 query heads of a group share it).
    assert (s4.m, s4.n, s4.k, s4.batch) == (7, 4096, 128, 4)
    assert s32.n == 32768
    step4, step32 = step_time(config(**QWEN25_7B), t4k), step_time(config(**QWEN25_7B), t32k)
    assert step32.total_s > step4.total_s


def test_active_experts_by_hand() -> None:
    assert active_experts(8, 2, 1) == pytest.approx(2.0)
    assert active_experts(256, 8, 1) == pytest.approx(8.0)
    # Two tokens: 8·(1 − (6/8)²) = 3.5.
    assert active_experts(8, 2, 2) == pytest.approx(3.5)
    assert active_experts(8, 2, 4096) == pytest.approx(8.0)


def test_mixtral_decode_costs_about_the_active_weight_read() -> None:
    # Active weights per token, by hand: attention 4096·(32+2·8)·128 + 32·128·4096 = 41.94M,
    # two experts 2·3·4096·14336 = 352.32M, router 4096·8, per layer; × 32 layers, plus the
    # 32000×4096 logit matrix: 12.75G parameters = 25.5 GB in bf16.
    per_layer = 4096 * 48 * 128 + 32 * 128 * 4096 + 2 * 3 * 4096 * 14336 + 4096 * 8
    active = 32 * per_layer + 32000 * 4096
    read_s = active * 2 / 3350e9
    assert read_s == pytest.approx(7.61e-3, rel=0.01)
    target = Target(gpu=H100, mode="decode", micro_batch=1, seq_len=4096)
    step = step_time(config(**MIXTRAL), target)
    assert read_s <= step.total_s <= 1.5 * read_s


def test_moe_training_runs_every_expert_with_its_top_k_tokens() -> None:
    gemms = by_name(step_gemms(config(**MIXTRAL), Target(gpu=H100, seq_len=4096)))
    up = gemms["experts_up"]
    # 4096 tokens × top-2 over 8 experts: 1024 rows each, gate and up fused (2·14336).
    assert (up.m, up.n, up.k, up.batch, up.count) == (1024, 28672, 4096, 8, 32)


def test_deepseek_v3_mla_shared_experts_and_dense_layers() -> None:
    target = Target(gpu=H100, micro_batch=1, seq_len=4096)
    gemms = by_name(step_gemms(config(**DEEPSEEK_V3), target))
    assert (gemms["q_down"].n, gemms["q_down"].k) == (1536, 7168)
    assert (gemms["q_up"].n, gemms["q_up"].k) == (128 * 192, 1536)
    assert (gemms["kv_down"].n, gemms["kv_down"].k) == (512 + 64, 7168)
    assert (gemms["kv_up"].n, gemms["kv_up"].k) == (128 * (128 + 128), 512)
    assert (gemms["attn_out"].n, gemms["attn_out"].k) == (7168, 128 * 128)
    # The first 3 layers are dense (width 18432); the other 58 are MoE with one shared expert.
    assert gemms["mlp_up"].count == 3 and gemms["mlp_up"].n == 18432
    assert gemms["experts_up"].count == 58 and gemms["shared_up"].n == 2048
    # The attention projections' FLOPs, by hand, are the low-rank ones: per token
    # 7168·1536 + 1536·24576 + 7168·576 + 512·32768 + 16384·7168 = 200.0M MACs, not the
    # 7168·(3·24576) = 528.5M of a dense MHA at head dim 192.
    macs = sum(gemms[n].n * gemms[n].k for n in ("q_down", "q_up", "kv_down", "kv_up", "attn_out"))
    assert macs == 7168 * 1536 + 1536 * 24576 + 7168 * 576 + 512 * 32768 + 16384 * 7168


def test_deepseek_v3_decode_uses_the_absorbed_latent_cache() -> None:
    target = Target(gpu=H100, mode="decode", micro_batch=1, seq_len=4096)
    gemms = by_name(step_gemms(config(**DEEPSEEK_V3), target))
    scores = gemms["attn_scores"]
    # Every head attends over the one cached latent: kv_lora + rope = 576 per position.
    assert (scores.m, scores.n, scores.k, scores.batch) == (128, 4096, 576, 1)
    assert "kv_up" not in gemms
    # Eight routed experts (and the shared one) per MoE layer, not 256.
    assert gemms["experts_up"].batch == 8


def test_deepseek_config_dims_from_the_corpus() -> None:
    path = CORPUS / "deepseek-v3" / "inference" / "configs" / "config_671B.json"
    if not path.exists():
        pytest.skip("shared corpus not present")
    text = path.read_text(encoding="utf-8")
    raw = json.loads(text)
    (cfg,) = configs_of(text, "json", str(path))
    assert cfg.int(Dim.Q_LORA_RANK) == raw["q_lora_rank"]
    assert cfg.int(Dim.KV_LORA_RANK) == raw["kv_lora_rank"]
    assert cfg.int(Dim.ROPE_HEAD_DIM) == raw["qk_rope_head_dim"]
    assert cfg.int(Dim.SHARED_EXPERTS) == raw["n_shared_experts"]
    assert cfg.int(Dim.DENSE_LAYERS) == raw["n_dense_layers"]

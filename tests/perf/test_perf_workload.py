"""The GEMM list of one step: shapes, GQA, tensor parallelism, MoE, passes."""

from __future__ import annotations

from shapelint.core.model import Dim, ModelConfig, Target, Value
from shapelint.core.source import Span
from shapelint.hardware.gpus import lookup
from shapelint.perf.workload import Gemm, backward, flash_head_dim, step_gemms

SPAN = Span("config.json", 1, 1, 1, 2, 0, 1)


def config(gated: bool | None = True, **dims: int) -> ModelConfig:
    return ModelConfig(
        name="test",
        path="config.json",
        dialect="test",
        dims={Dim(k): Value(v, k, SPAN) for k, v in dims.items()},
        gated_mlp=gated,
    )


LLAMA2_7B = dict(hidden=4096, heads=32, layers=32, ffn=11008, vocab=32000)


def target(**kw: object) -> Target:
    return Target(gpu=lookup("h100"), **kw)  # type: ignore[arg-type]


def by_name(gemms: list[Gemm], pass_: str = "fwd") -> dict[str, Gemm]:
    return {g.name: g for g in gemms if g.pass_ == pass_}


def test_llama2_7b_forward_shapes() -> None:
    gemms = by_name(step_gemms(config(**LLAMA2_7B), target(micro_batch=2, seq_len=4096)))
    tokens = 2 * 4096
    assert (gemms["qkv"].m, gemms["qkv"].n, gemms["qkv"].k) == (tokens, 3 * 4096, 4096)
    assert (gemms["attn_out"].n, gemms["attn_out"].k) == (4096, 4096)
    assert (gemms["mlp_up"].n, gemms["mlp_gate"].n, gemms["mlp_down"].k) == (11008,) * 3
    assert (gemms["logits"].n, gemms["logits"].count) == (32000, 1)
    assert gemms["qkv"].count == 32
    attn = gemms["attention"]
    assert (attn.kind, attn.m, attn.n, attn.k, attn.batch) == ("flash", 4096, 4096, 128, 64)


def test_plain_mlp_has_no_gate() -> None:
    for gated in (False, None):
        gemms = by_name(step_gemms(config(gated, **LLAMA2_7B), target()))
        assert "mlp_gate" not in gemms
        assert gemms["mlp_up"].n == 11008


def test_an_unknown_ffn_is_not_timed() -> None:
    # No FFN width stated or derived: no step (the model does not time 4 · hidden, a guess).
    dims = dict(LLAMA2_7B)
    del dims["ffn"]
    assert step_gemms(config(**dims), target()) == []
    # A MoE model whose every layer is MoE needs only the experts' width.
    moe = dict(dims, experts=8, experts_per_token=2, moe_ffn=14336)
    assert "experts_up" in by_name(step_gemms(config(**moe), target()))
    assert step_gemms(config(**dict(dims, experts=8, experts_per_token=2)), target()) == []


def test_gqa_qkv_width() -> None:
    # Llama-3-8B: 32 heads, 8 KV heads, head dim 128: N = (32 + 2*8) * 128.
    gemms = by_name(step_gemms(config(**LLAMA2_7B, kv_heads=8), target()))
    assert gemms["qkv"].n == 48 * 128


def test_tensor_parallel_splits() -> None:
    gemms = by_name(step_gemms(config(**LLAMA2_7B, kv_heads=8), target(tp=4, micro_batch=1)))
    assert gemms["qkv"].n == 48 * 128 // 4
    assert gemms["attn_out"].k == 4096 // 4 and gemms["attn_out"].n == 4096
    assert gemms["mlp_up"].n == 11008 // 4 and gemms["mlp_down"].k == 11008 // 4
    assert gemms["logits"].n == 32000 // 4
    assert gemms["attention"].batch == 32 // 4


def test_unfused_attention_shapes() -> None:
    gemms = by_name(step_gemms(config(**LLAMA2_7B), target(attention="unfused", seq_len=2048)))
    s, v = gemms["attn_scores"], gemms["attn_values"]
    assert (s.m, s.n, s.k, s.batch) == (2048, 2048, 128, 32)
    assert (v.m, v.n, v.k, v.b_contig) == (2048, 128, 2048, "n")


def test_flash_pads_head_dim() -> None:
    assert [flash_head_dim(d) for d in (64, 80, 96, 100, 128, 132, 256, 300)] == [
        64,
        96,
        96,
        128,
        128,
        160,
        256,
        320,
    ]
    phi2 = dict(hidden=2560, heads=32, layers=32, ffn=10240, vocab=50304)
    gemms = by_name(step_gemms(config(**phi2), target()))
    assert (gemms["attention"].k, gemms["attention"].head_dim) == (96, 80)


def test_moe_tokens_per_expert() -> None:
    dims = dict(LLAMA2_7B, experts=8, experts_per_token=2, moe_ffn=14336)
    gemms = by_name(step_gemms(config(**dims), target(micro_batch=1, seq_len=4096)))
    assert "mlp_up" not in gemms
    up, down = gemms["experts_up"], gemms["experts_down"]
    assert (up.m, up.batch) == (4096 * 2 // 8, 8)
    assert up.n == 2 * 14336  # gated: up and gate fused
    assert (down.n, down.k) == (4096, 14336)
    assert gemms["router"].n == 8


def test_train_has_three_passes_prefill_one() -> None:
    train = step_gemms(config(**LLAMA2_7B), target(mode="train"))
    assert {g.pass_ for g in train} == {"fwd", "dgrad", "wgrad"}
    linear = [g for g in train if g.name == "mlp_down"]
    assert [g.pass_ for g in linear] == ["fwd", "dgrad", "wgrad"]
    fwd, dgrad, wgrad = linear
    assert (dgrad.m, dgrad.n, dgrad.k) == (fwd.m, fwd.k, fwd.n)
    assert (wgrad.m, wgrad.n, wgrad.k) == (fwd.k, fwd.n, fwd.m)
    assert [g.pass_ for g in train if g.name == "attention"] == ["fwd", "dgrad"]
    prefill = step_gemms(config(**LLAMA2_7B), target(mode="prefill"))
    assert {g.pass_ for g in prefill} == {"fwd"}


def test_backward_layouts() -> None:
    fwd = Gemm("x", "fwd", 10, 20, 30)
    dgrad, wgrad = backward(fwd)
    assert (dgrad.a_contig, dgrad.b_contig) == ("k", "n")
    assert (wgrad.a_contig, wgrad.b_contig) == ("m", "n")


def test_decode_is_skinny_and_reads_the_cache() -> None:
    gemms = by_name(
        step_gemms(config(**LLAMA2_7B, kv_heads=8), target(mode="decode", micro_batch=4))
    )
    assert gemms["qkv"].m == 4
    scores = gemms["attn_scores"]
    assert (scores.m, scores.n, scores.k, scores.batch) == (4, 4096, 128, 4 * 8)


def test_missing_dims_give_no_workload() -> None:
    assert step_gemms(config(hidden=4096, heads=32), target()) == []
    assert step_gemms(config(hidden=4096, layers=2), target()) == []
    no_vocab = by_name(step_gemms(config(hidden=64, heads=2, layers=1), target()))
    assert "logits" not in no_vocab


def test_padded_vocab_is_used() -> None:
    gemms = by_name(step_gemms(config(**LLAMA2_7B, padded_vocab=32128), target()))
    assert gemms["logits"].n == 32128

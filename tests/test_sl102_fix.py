"""SL102's fix: of the nearest head counts below and above with a head dim that is a multiple
of 64, the one the performance model runs faster per FLOP on the target."""

from __future__ import annotations

from conftest import configs_of

from shapelint.core.model import Dim, Target
from shapelint.hardware.gpus import lookup
from shapelint.perf.estimate import step_time
from shapelint.rules import sl102_head_dim

GPT3_27B = (
    '{"hidden_size": 2560, "num_attention_heads": 32, "num_hidden_layers": 32,'
    ' "intermediate_size": 10240, "vocab_size": 50304}\n'
)


def _cost(config, target, heads: int) -> float:  # type: ignore[no-untyped-def]
    step = step_time(config.with_dims({Dim.HEADS: heads, Dim.HEAD_DIM: 2560 // heads}), target)
    return step.total_s / step.flops


def test_the_fix_takes_the_faster_of_the_two_nearest_head_counts() -> None:
    (config,) = configs_of(GPT3_27B, "json", "config.json")
    for gpu in ("h100", "a100"):
        target = Target(gpu=lookup(gpu), seq_len=2048)
        (finding,) = sl102_head_dim.check(config, target)
        assert finding.fix is not None
        chosen = dict(finding.fix.dims)[Dim.HEADS]
        # The two candidates: 40 heads of 64 and 20 heads of 128 (2560 = 40·64 = 20·128).
        assert chosen in (20, 40)
        other = 60 - chosen
        assert _cost(config, target, chosen) <= _cost(config, target, other)


def test_tensor_parallel_and_kv_heads_still_divide() -> None:
    gqa = GPT3_27B.replace(
        '"num_attention_heads": 32', '"num_attention_heads": 32, "num_key_value_heads": 8'
    )
    (config,) = configs_of(gqa, "json", "config.json")
    (finding,) = sl102_head_dim.check(config, Target(gpu=lookup("h100"), tp=8))
    assert finding.fix is not None
    heads = dict(finding.fix.dims)[Dim.HEADS]
    assert heads % 8 == 0 and (2560 // heads) % 64 == 0  # 40 heads: 20 does not divide by 8


def test_no_head_dim_wider_than_flash_attention_takes() -> None:
    # Llama-style 2560 / 32 with 8 KV heads: 20 heads (128) do not divide by 8; below that,
    # 8 heads would be 320 wide, past FlashAttention's 256. Only 40 heads of 64 remain.
    text = GPT3_27B.replace(
        '"num_attention_heads": 32', '"num_attention_heads": 32, "num_key_value_heads": 8'
    )
    (config,) = configs_of(text, "json", "config.json")
    (finding,) = sl102_head_dim.check(config, Target(gpu=lookup("h100")))
    assert finding.fix is not None
    heads = dict(finding.fix.dims)[Dim.HEADS]
    assert heads == 40 and 2560 // heads <= 256

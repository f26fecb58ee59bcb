"""vLLM and SGLang replicate each KV head on several GPUs when tensor parallel exceeds the KV heads.

Guideline: with t > kv tensor-parallel ranks and t divisible by kv, vLLM and SGLang give each
rank one KV head and store each head on t/kv ranks. Every rank then caches one KV head where
kv/t would do, so the KV cache takes t/kv times the memory an even split would, and fewer
sequences fit in a batch. Nothing is logged.

The finding states the replication factor; it has no step-time estimate (the cost is memory
and batch size, which the performance model does not size).

Source: vLLM 0.34.0 ``vllm/model_executor/layers/linear.py:1113-1119``
(``num_kv_head_replicas``); SGLang 0.5.23 ``sglang/srt/layers/linear.py:1140-1145``.
"""

from __future__ import annotations

from collections.abc import Iterator

from shapelint.core.model import Dim, Finding, ModelConfig, Target
from shapelint.rules.base import Example, Expect, Rule
from shapelint.rules.engine_shapes import engines_for, is_mla, refused_by

RULE = Rule(
    code="SL311",
    name="kv-head-replication",
    severity="warning",
    summary="tensor parallel exceeds the KV heads: each KV head is cached on several GPUs",
    source="vLLM 0.34.0, SGLang 0.5.23 QKVParallelLinear",
    family="engine",
)

VERIFIED = {
    "vllm": "vllm/model_executor/layers/linear.py:1113-1119",
    "sglang": "sglang/srt/layers/linear.py:1140-1145",
}

_LLAMA3_8B = (
    '{"architectures": ["LlamaForCausalLM"], "hidden_size": 4096, "num_attention_heads": 32,'
    ' "num_key_value_heads": 8, "intermediate_size": 14336, "num_hidden_layers": 32,'
    ' "vocab_size": 128256}\n'
)
EXAMPLES = [
    Example(_LLAMA3_8B, True, target={"tp": 8}),
    Example(
        _LLAMA3_8B,
        False,
        target={"tp": 16},
        note="8 KV heads over 16 GPUs",
        expect=(Expect(1, "8", "num_key_value_heads = 8 KV heads over tensor parallel 16"),),
    ),
]


def check(config: ModelConfig, target: Target) -> Iterator[Finding]:
    """Report the KV heads when t > kv and each head is replicated t/kv times."""
    t = target.tp
    engines = engines_for(target, VERIFIED)
    kv, g = config.get(Dim.KV_HEADS), config.int(Dim.KV_HEADS)
    if t <= 1 or not engines or kv is None or g is None or kv.derived or is_mla(config):
        return
    a = config.int(Dim.HEADS)
    if g >= t or t % g or (a is not None and a % t):
        return  # no replication, or SL301 reports the split
    yield RULE.finding(
        config,
        kv,
        f"{kv.key} = {g} KV heads over tensor parallel {t}: each KV head is replicated on "
        f"{t // g} GPUs, so the KV cache takes {t // g}x the memory of an even split "
        f"{refused_by(engines, 'in')}; consider tensor parallel {g} with data parallel",
    )

"""FlashInfer's decode kernels are compiled for a few head dims and GQA group sizes.

Guideline: FlashInfer dispatches its attention kernels on the head dim (64, 128, 256 or 512)
and its decode kernels also on the GQA group size per GPU — query heads per KV head after
tensor parallelism — (1, 2, 3, 4, 6 or 8), and raises ``Unsupported head_dim`` or
``Unsupported group_size`` for anything else. Both sets have grown from release to release
(6 is newer than the rest; 16 has been proposed), so this is a warning that names the version
checked, and it runs when a target names the kernel (``--engine flashinfer``). vLLM and
SGLang use FlashInfer as one backend among several; SL310 covers vLLM's choice.

Source: FlashInfer 0.6.18 (commit fb28d724) ``include/flashinfer/utils.cuh:142-166``
(``DISPATCH_GQA_GROUP_SIZE``), ``:197-224`` (``DISPATCH_HEAD_DIM``), used by
``csrc/batch_decode.cu:63, 106``; FlashInfer issue #996.
"""

from __future__ import annotations

from collections.abc import Iterator

from shapelint.core.model import Dim, Finding, ModelConfig, Target
from shapelint.rules.base import Example, Expect, Rule
from shapelint.rules.engine_shapes import is_mla, refused_by

RULE = Rule(
    code="SL313",
    name="flashinfer-decode-shape",
    severity="warning",
    summary="FlashInfer has no decode kernel for this head dim or GQA group size",
    source="FlashInfer 0.6.18 include/flashinfer/utils.cuh",
    family="engine",
)

VERIFIED = {"flashinfer": "include/flashinfer/utils.cuh:142-166, 197-224; csrc/batch_decode.cu:63"}

HEAD_DIMS = frozenset({64, 128, 256, 512})
GROUP_SIZES = frozenset({1, 2, 3, 4, 6, 8})

_QWEN3_NEXT_LIKE = (
    '{"hidden_size": 2048, "num_attention_heads": 16, "num_key_value_heads": 2, "head_dim": 256,'
    ' "intermediate_size": 5120, "num_hidden_layers": 48, "vocab_size": 151936}\n'
)
EXAMPLES = [
    Example(_QWEN3_NEXT_LIKE, True, target={"engines": ("flashinfer",)}, note="group size 8"),
    Example(
        '{"hidden_size": 2048, "num_attention_heads": 32, "num_key_value_heads": 2, "head_dim": 128,'
        ' "intermediate_size": 5120, "num_hidden_layers": 48, "vocab_size": 151936}\n',
        False,
        target={"engines": ("flashinfer",)},
        note="32 query heads per 2 KV heads: group size 16",
        expect=(Expect(1, "2", "Unsupported group_size"),),
    ),
    Example(
        '{"architectures": ["Phi3ForCausalLM"], "hidden_size": 3072, "num_attention_heads": 32,'
        ' "num_key_value_heads": 32, "intermediate_size": 8192, "num_hidden_layers": 32,'
        ' "vocab_size": 32064}\n',
        False,
        target={"engines": ("flashinfer",)},
        note="Phi-3-mini: head dim 96",
        expect=(Expect(1, "3072", "Unsupported head_dim"),),
    ),
]


def check(config: ModelConfig, target: Target) -> Iterator[Finding]:
    """Report the head dim, else the KV heads, when FlashInfer has no kernel for them."""
    if "flashinfer" not in target.engines or is_mla(config):
        return
    head_dim, d = config.get(Dim.HEAD_DIM), config.int(Dim.HEAD_DIM)
    if head_dim is not None and d is not None and d not in HEAD_DIMS:
        yield RULE.finding(
            config,
            head_dim,
            f"Unsupported head_dim: {d} (FlashInfer compiles 64, 128, 256, 512) "
            f"{refused_by(['flashinfer'], 'checked against')}",
        )
        return
    a, kv_value, kv = config.int(Dim.HEADS), config.get(Dim.KV_HEADS), config.int(Dim.KV_HEADS)
    t = max(target.tp, 1)
    if a is None or kv_value is None or kv is None or a % t or a % kv:
        return
    per_rank_kv = kv // t if kv >= t and kv % t == 0 else 1 if t % kv == 0 else None
    if per_rank_kv is None:
        return
    group = (a // t) // per_rank_kv
    if group in GROUP_SIZES:
        return
    yield RULE.finding(
        config,
        kv_value,
        f"Unsupported group_size: {group} ({a // t} query heads per {per_rank_kv} KV "
        f"head{'s' if per_rank_kv > 1 else ''} per GPU; the decode kernels compile 1, 2, 3, 4, "
        f"6, 8) {refused_by(['flashinfer'], 'checked against')}",
    )

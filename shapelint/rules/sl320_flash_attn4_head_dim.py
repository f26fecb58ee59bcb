"""FlashAttention-4 (the CuTe DSL kernels) refuses this head dim on this GPU.

Guideline: FlashAttention-4 checks the Q/K and V head dims against the GPU it runs on before
it compiles a kernel, and raises an ``AssertionError`` for any other pair:

- Hopper (sm90): both head dims between 8 and 256 and multiples of 16 bytes' worth of
  elements (8 for BF16/FP16, 16 for FP8);
- Blackwell (sm100, sm110): both at most 128 (and at least 8), or the dedicated pairs (192, 128)
  (DeepSeek's MLA), (64, 512) and (512, 512) (MLA with absorbed weights), (256, 256) — with the
  same alignment.

Ampere (sm80) and consumer Blackwell (sm120) have no such check (SL004 reports KV heads that
do not divide the query heads, which FlashAttention-4 also refuses). This is a kernel, not an engine: the rule runs when a target names it
(``--engine flash-attn4``), on GPUs whose compute capability shapelint knows. Engines that
pick a kernel per config (vLLM, Transformer Engine) move on to another one instead of
raising; SL321 reports Transformer Engine's choice.

Source: flash-attention commit 0251105a (tag fa4-v4.0.0.beta27)
``flash_attn/cute/interface.py:111-129`` (``_validate_head_dims``), called for the forward
pass at ``:681-685`` and the backward pass at ``:2082-2085``.
"""

from __future__ import annotations

from collections.abc import Iterator

from shapelint.core.model import Dim, Finding, ModelConfig, Target
from shapelint.perf.te_attention import fa4_refusal
from shapelint.rules.base import Example, Expect, Rule
from shapelint.rules.engine_shapes import head_dim_views, refused_by

RULE = Rule(
    code="SL320",
    name="flash-attn4-head-dim",
    severity="error",
    summary="FlashAttention-4 refuses this head dim on this GPU (sm90 / sm100)",
    source="flash-attention fa4-v4.0.0.beta27: flash_attn/cute/interface.py",
    family="engine",
)

VERIFIED = {"flash-attn4": "flash_attn/cute/interface.py:111-129, 681-685, 2082-2085"}

_FA4: dict[str, object] = {"engines": ("flash-attn4",)}
EXAMPLES = [
    Example(
        '{"hidden_size": 3072, "num_attention_heads": 16, "head_dim": 256, "num_key_value_heads": 16,'
        ' "intermediate_size": 24576, "num_hidden_layers": 28, "vocab_size": 256000}\n',
        True,
        target=_FA4,
        note="Gemma 7B: head dim 256 on H100 (sm90)",
    ),
    Example(
        '{"hidden_size": 3200, "num_attention_heads": 32, "intermediate_size": 8640,'
        ' "num_hidden_layers": 26, "vocab_size": 32000}\n',
        False,
        target=_FA4,
        note="OpenLLaMA 3B on H100: head dim 3200 / 32 = 100",
        expect=(Expect(1, "3200", "(head_dim, head_dim_v)=(100, 100) is not supported on SM90"),),
    ),
]


def _check_view(config: ModelConfig, target: Target) -> Iterator[Finding]:
    """Report the head dim when FlashAttention-4 refuses it on the target GPU."""
    if "flash-attn4" not in target.engines or not config.has_attention:
        return
    capability = target.gpu.compute_capability
    head_dim, d = config.get(Dim.HEAD_DIM), config.int(Dim.HEAD_DIM)
    if capability is None or head_dim is None or d is None:
        return
    dv = config.int(Dim.V_HEAD_DIM) or d
    message = fa4_refusal(d, dv, capability[0], 1 if target.dtype == "fp8" else 2)
    if message is None:
        return
    yield RULE.finding(
        config,
        head_dim,
        f"{message} ({target.gpu.name}) {refused_by(['flash-attn4'])}",
    )


def check(config: ModelConfig, target: Target) -> Iterator[Finding]:
    """Report the head dim when FlashAttention-4 refuses it on the target GPU.
    Gemma 4's full-attention layers are checked at their own head dim (``global_head_dim``)."""
    for view in head_dim_views(config):
        yield from _check_view(view, target)

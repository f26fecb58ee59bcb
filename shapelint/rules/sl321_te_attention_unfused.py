"""Transformer Engine trains this head dim with its unfused attention: no fused kernel takes it.

Guideline: Transformer Engine (under Megatron-LM, NeMo and others) picks an attention backend
per shape, quietly: FlashAttention 2 takes padded head dims that are multiples of 8 up to 256
(above 192 only on sm80, sm90, sm100, sm120 — not on the sm86/sm89 cards: A10, L4, L40S, RTX
3090/4090); FlashAttention 3 runs only on sm90; FlashAttention 4 on sm90 and sm100 with its own
head-dim sets (SL320); cuDNN's fused attention trains head dims up to 128, up to 256 only on
sm90, and the pairs (192, 128) and (256, 256) on sm100. When none accepts the shape, TE runs
``UnfusedDotProductAttention`` — the full score matrix written and read back, softmax as a
separate kernel — with nothing above debug logging to say so.

The rule asks whether *any* installation (every flash-attn package, any cuDNN version TE knows)
has a fused kernel for the shape in training, so a report holds whatever is installed. On
sm90, FlashAttention 3 passes TE's filter for head dims that are not multiples of 8 and then
raises in its own kernel; the message says so. GPUs without a fused kernel for any shape
(compute capability below 8.0) and GPUs whose compute capability shapelint does not know are
not checked. With context parallelism the unfused backend is disabled too: SL322 reports the
error TE raises then.

The estimate is the step with unfused attention against the same step with a fused kernel
(shapelint's performance model, ``--attention unfused`` against ``flash``).

Source: TransformerEngine commit d0067d0d (2.20.0.dev0)
``transformer_engine/pytorch/attention/dot_product_attention/utils.py:568-595, 903-1069,
1456-1493, 1625-1668`` and ``transformer_engine/common/fused_attn/fused_attn.cpp:297-353``
(see ``shapelint/rules/te_attention.py``).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace

from shapelint.core.model import Dim, Finding, ModelConfig, Target, Value
from shapelint.hardware.arch import sm
from shapelint.perf.te_attention import TRANSFORMER_ENGINE, Choice, reasons, te_backends
from shapelint.rules.base import Example, Expect, Rule
from shapelint.rules.engine_shapes import engines_for, head_dim_views, refused_by

RULE = Rule(
    code="SL321",
    name="te-attention-unfused",
    severity="warning",
    summary="Transformer Engine falls back to unfused attention for this head dim on this GPU",
    source="TransformerEngine 2.20.0.dev0: dot_product_attention/utils.py get_attention_backend",
    family="engine",
)

VERIFIED = {
    "transformer-engine": "transformer_engine/pytorch/attention/dot_product_attention/"
    "utils.py:568-595, 903-1069, 1456-1493, 1625-1668; "
    "transformer_engine/common/fused_attn/fused_attn.cpp:297-353",
}

_TE: dict[str, object] = {"engines": ("transformer-engine",)}
EXAMPLES = [
    Example(
        '{"hidden_size": 3072, "num_attention_heads": 16, "head_dim": 256, "num_key_value_heads": 16,'
        ' "intermediate_size": 24576, "num_hidden_layers": 28, "vocab_size": 256000}\n',
        True,
        target=_TE,
        note="Gemma 7B on H100: head dim 256 (FlashAttention 2/3, cuDNN on sm90)",
    ),
    Example(
        '{"hidden_size": 3200, "num_attention_heads": 32, "intermediate_size": 8640,'
        ' "num_hidden_layers": 26, "vocab_size": 32000}\n',
        False,
        target=_TE,
        note="OpenLLaMA 3B on H100: head dim 3200 / 32 = 100, not a multiple of 8",
        expect=(Expect(1, "3200", "no fused attention kernel for head dim 100 on sm90"),),
    ),
]


def te_choice(config: ModelConfig, target: Target) -> tuple[Value, Choice, str] | None:
    """(head-dim value, TE's choice, ``head dim 100 on sm90``) for a training target on a GPU
    with fused kernels, or None when the rule does not apply (`te_backends`)."""
    head_dim = config.get(Dim.HEAD_DIM)
    choice = te_backends(config, target)
    cc = target.gpu.compute_capability
    if head_dim is None or choice is None or cc is None:
        return None
    d = config.int(Dim.HEAD_DIM)
    dv = config.int(Dim.V_HEAD_DIM) or d
    shown = f"head dim {d}" if dv == d else f"head dims {d}/{dv} (Q·K/V)"
    return head_dim, choice, f"{shown} on {sm(cc)}"


def unfused_slowdown(config: ModelConfig, target: Target) -> float | None:
    """Percent step time unfused attention adds over a fused kernel (None: no estimate). The
    fused step is the target without Transformer Engine among its engines, whose choice
    would otherwise make the step unfused again (`engine_attention`)."""
    from shapelint.perf.estimate import step_time

    engines = tuple(e for e in target.engines if e != TRANSFORMER_ENGINE)
    try:
        fused = step_time(config, replace(target, attention="flash", engines=engines))
        unfused = step_time(config, replace(target, attention="unfused"))
    except ValueError:
        return None
    if fused.total_s <= 0:
        return None
    return 100.0 * (unfused.total_s / fused.total_s - 1.0)


def unfused_cost(config: ModelConfig, target: Target) -> str:
    """``; estimated +9.5% step time on L40S`` for unfused attention, or "" without one."""
    pct = unfused_slowdown(config, target)
    return f"; estimated +{pct:.1f}% step time on {target.gpu.name}" if pct and pct > 0 else ""


def fa3_note(choice: Choice) -> str:
    """The sentence for sm90, where FlashAttention 3 (when installed) is chosen and raises."""
    if not choice.fa3_raises:
        return ""
    return (
        "; with flash-attn 3 installed TE selects FlashAttention 3 instead, which raises "
        "'head_size should be a multiple of 8'"
    )


def _check_view(config: ModelConfig, target: Target) -> Iterator[Finding]:
    """Report the head dim when TE has no fused attention kernel for it in training."""
    engines = engines_for(target, VERIFIED)
    found = te_choice(config, target) if engines and target.cp <= 1 else None
    if found is None:
        return
    head_dim, choice, shown = found
    if choice.available:
        return
    cost = unfused_cost(config, target)
    yield RULE.finding(
        config,
        head_dim,
        f"Transformer Engine has no fused attention kernel for {shown} in training "
        f"({reasons(choice)}) and runs UnfusedDotProductAttention{fa3_note(choice)}{cost} "
        f"{refused_by(engines, 'in')}",
    )


def check(config: ModelConfig, target: Target) -> Iterator[Finding]:
    """Report the head dim when TE has no fused attention kernel for it in training.
    Gemma 4's full-attention layers are checked at their own head dim (``global_head_dim``)."""
    for view in head_dim_views(config):
        yield from _check_view(view, target)

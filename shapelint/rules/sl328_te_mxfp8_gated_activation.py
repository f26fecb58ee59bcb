"""Transformer Engine's fused gated activation refuses an MXFP8 FFN width not a multiple of 32.

Guideline: under the MXFP8 recipe, Transformer Engine's ``LayerNormMLP`` computes a gated
activation (SwiGLU, GeGLU, ReGLU) and quantizes its output to MXFP8 in one kernel: the output
is the FFN width on one GPU, f/t, and the kernel checks it is a multiple of 32 (an MXFP8
scaling block) before launching, raising "Invalid input shape. Expected the last dimension to
be divisible by 32". Qwen2.5-72B (f = 29568) at tensor parallel 8 has 3696 per GPU, a multiple
of 16 that SL324's check accepts but 3696 = 115·32 + 16. Delayed and current scaling have no
such check (their fused kernel handles any width), nor does NVFP4, which quantizes after an
unfused activation.

The rule runs for ``--dtype fp8 --fp8-recipe mxfp8`` targets on Transformer Engine with a
gated MLP. Megatron-LM and NeMo configs are not checked: Megatron's MLP applies its own
activation between two TE linears unless ``use_te_activation_func`` or ``use_te_op_fuser`` is
set (both off by default), and shapelint reads neither.

Source: TransformerEngine commit d0067d0d (2.20.0.dev0) ``transformer_engine/pytorch/module/
layernorm_mlp.py:650`` (``activation_func(fc1_out, fc2_input_quantizer)`` for the MXFP8 recipe),
``pytorch/csrc/extensions/activation.cpp:36-39`` (an MXFP8 quantizer takes the fully fused
path) and ``:325`` (``swiglu``), ``common/cast/dispatch/gated.cuh:35`` (``cols`` is half the
fc1 output) and ``:73-77`` (the check); Megatron-LM d98e8a64
``megatron/core/models/gpt/gpt_layer_specs.py:532`` and
``megatron/core/transformer/transformer_config.py:1199``.
"""

from __future__ import annotations

from collections.abc import Iterator

from shapelint.core.model import Dim, Finding, ModelConfig, Target
from shapelint.rules.base import Example, Expect, Rule
from shapelint.rules.engine_shapes import engines_for, refused_by

RULE = Rule(
    code="SL328",
    name="te-mxfp8-gated-activation",
    severity="error",
    summary="Transformer Engine's MXFP8 gated activation refuses a per-GPU FFN width not a "
    "multiple of 32",
    source="TransformerEngine 2.20.0.dev0: transformer_engine/common/cast/dispatch/gated.cuh",
    family="engine",
)

VERIFIED = {
    "transformer-engine": "transformer_engine/pytorch/module/layernorm_mlp.py:650; "
    "pytorch/csrc/extensions/activation.cpp:36-39, 325; common/cast/dispatch/gated.cuh:35, 73-77",
}

# MXFP8_BLOCK_SCALING_SIZE (transformer_engine/pytorch/constants.py:175).
BLOCK = 32

_QWEN25_72B = (
    '{"architectures": ["Qwen2ForCausalLM"], "hidden_size": 8192, "num_attention_heads": 64,\n'
    ' "num_key_value_heads": 8, "intermediate_size": 29568, "num_hidden_layers": 80,\n'
    ' "vocab_size": 152064, "hidden_act": "silu"}\n'
)
_MXFP8: dict[str, object] = {
    "dtype": "fp8",
    "fp8_recipe": "mxfp8",
    "engines": ("transformer-engine",),
}
EXAMPLES = [
    Example(_QWEN25_72B, True, target={**_MXFP8, "tp": 4}, note="29568 / 4 = 7392 = 231·32"),
    Example(
        _QWEN25_72B,
        False,
        target={**_MXFP8, "tp": 8},
        note="Qwen2.5-72B at tensor parallel 8: 29568 / 8 = 3696 per GPU",
        expect=(Expect(2, "29568", "Invalid input shape. Expected the last dimension to be"),),
    ),
]


def check(config: ModelConfig, target: Target) -> Iterator[Finding]:
    """Report the FFN width when its per-GPU share is not a multiple of an MXFP8 block."""
    engines = engines_for(target, VERIFIED)
    if not engines or target.dtype != "fp8" or target.fp8_recipe != "mxfp8":
        return
    if target.mode != "train" or not config.gated_mlp or config.traits.own_mlp_activation:
        return  # no fused gated activation (Megatron-LM and NeMo apply their own)
    t = max(target.tp, 1)
    ffn, f = config.get(Dim.FFN), config.int(Dim.FFN)
    if ffn is None or f is None or f % t or (f // t) % BLOCK == 0:
        return
    yield RULE.finding(
        config,
        ffn,
        f"Invalid input shape. Expected the last dimension to be divisible by {BLOCK}, but got "
        f"{f // t}: the gated activation's output, {ffn.key} = {f} over tensor parallel {t}, "
        f"quantized to MXFP8 in LayerNormMLP {refused_by(engines)}",
    )

"""Transformer Engine's quantized Linear layers refuse dims that are not multiples of 8 and 16.

Guideline: under ``te.autocast`` (FP8 with any recipe — delayed or current scaling, MXFP8,
NVFP4), every ``Linear``, ``LayerNormLinear`` and ``LayerNormMLP`` checks its input and
weights before the GEMM: the product of all dims but the last must be a multiple of 8 and the
last dim a multiple of 16, else it raises ``ValueError``. Per GPU under Megatron-style tensor
parallelism that means: the tokens of a micro-batch (b·s) a multiple of 8; each layer's input
width (hidden; the per-rank attention width a·d/t into the output projection; the per-rank
FFN width f/t into the down projection) a multiple of 16; each weight's per-rank output rows
(the fused q/k/v, the fused gate/up, hidden) a multiple of 8. The rule runs for FP8 targets
(``--dtype fp8``) that name Transformer Engine, or check every training engine; MoE experts
(TE's grouped GEMM) and the output layer (not a TE module under Megatron) are not checked.

Source: TransformerEngine commit d0067d0d (2.20.0.dev0) ``transformer_engine/pytorch/
utils.py:614-624`` (``assert_dim_for_fp8_exec``), called at ``module/linear.py:376``,
``module/layernorm_linear.py:184``, ``module/layernorm_mlp.py:356``; the flag is set for any
recipe (``module/base.py:1532-1536``).
"""

from __future__ import annotations

from collections.abc import Iterator

from shapelint.core.model import Dim, Finding, ModelConfig, Target, Value
from shapelint.rules.base import Example, Expect, Rule
from shapelint.rules.engine_shapes import engines_for, is_mla, refused_by

RULE = Rule(
    code="SL324",
    name="te-fp8-gemm-dims",
    severity="error",
    summary="Transformer Engine's FP8 Linear layers refuse per-GPU dims not multiples of 8 / 16",
    source="TransformerEngine 2.20.0.dev0: transformer_engine/pytorch/utils.py",
    family="engine",
    uses_micro_batch=True,
)

VERIFIED = {
    "transformer-engine": "transformer_engine/pytorch/utils.py:614-624; module/linear.py:376; "
    "module/layernorm_linear.py:184; module/layernorm_mlp.py:356",
}

ROWS, LAST = 8, 16

_QWEN25_72B = (
    '{"architectures": ["Qwen2ForCausalLM"], "hidden_size": 8192, "num_attention_heads": 64,\n'
    ' "num_key_value_heads": 8, "intermediate_size": 29568, "num_hidden_layers": 80,\n'
    ' "vocab_size": 152064, "hidden_act": "silu"}\n'
)
EXAMPLES = [
    Example(
        _QWEN25_72B, True, target={"dtype": "fp8", "engines": ("transformer-engine",), "tp": 8}
    ),
    Example(
        _QWEN25_72B,
        False,
        target={"dtype": "fp8", "engines": ("transformer-engine",), "tp": 16},
        note="Qwen2.5-72B at tensor parallel 16: FFN 29568 / 16 = 1848 per GPU",
        expect=(Expect(2, "29568", "FP8 execution requires the product of all dimensions except"),),
    ),
]


def _layers(config: ModelConfig, t: int) -> list[tuple[str, int, int, Value]]:
    """(layer, per-rank in, per-rank out, value) of Megatron's TE block; exact splits only."""
    out: list[tuple[str, int, int, Value]] = []
    h, hidden = config.int(Dim.HIDDEN), config.get(Dim.HIDDEN)
    a, d, kv = config.int(Dim.HEADS), config.int(Dim.HEAD_DIM), config.int(Dim.KV_HEADS)
    heads, kv_value = config.get(Dim.HEADS), config.get(Dim.KV_HEADS)
    if not h or hidden is None:
        return out
    if a and d and kv and heads is not None and kv_value is not None and a % t == 0:
        if not is_mla(config) and (kv % t == 0 or t % kv == 0):
            per_kv = kv // t if kv >= t else 1
            out.append(("linear_qkv", h, (a // t + 2 * per_kv) * d, kv_value))
        dv = config.int(Dim.V_HEAD_DIM) or d
        out.append(("linear_proj", a * dv // t, h, heads))
    f, ffn = config.int(Dim.FFN), config.get(Dim.FFN)
    if f and ffn is not None and f % t == 0:
        if config.gated_mlp is not None:
            out.append(("linear_fc1", h, (2 if config.gated_mlp else 1) * f // t, ffn))
        out.append(("linear_fc2", f // t, h, ffn))
    return out


def check(config: ModelConfig, target: Target) -> Iterator[Finding]:
    """Report the first dim TE's FP8 modules refuse, with every layer it refuses."""
    engines = engines_for(target, VERIFIED)
    if not engines or target.dtype != "fp8" or target.mode != "train":
        return
    t = max(target.tp, 1)
    bad = [(name, i, o, value) for name, i, o, value in _layers(config, t) if i % LAST or o % ROWS]
    tokens = target.micro_batch * target.seq_len
    if tokens % ROWS and not bad:
        # Point at the sequence length when the config states the one used, else the hidden.
        seq = config.get(Dim.SEQ_LEN) if config.int(Dim.SEQ_LEN) == target.seq_len else None
        at = seq or config.get(Dim.HIDDEN)
        if at is None:
            return
        yield RULE.finding(
            config,
            at,
            f"FP8 execution requires the product of all dimensions except the last to be "
            f"divisible by 8 and the last dimension to be divisible by 16: micro-batch "
            f"{target.micro_batch} × sequence {target.seq_len} = {tokens} tokens per step "
            f"{refused_by(engines)}",
        )
        return
    if not bad:
        return
    shown = ", ".join(f"{name} weight {o}×{i}" for name, i, o, _ in bad)
    yield RULE.finding(
        config,
        bad[0][3],
        "FP8 execution requires the product of all dimensions except the last to be divisible "
        f"by 8 and the last dimension to be divisible by 16: {shown} per GPU at tensor "
        f"parallel {t} {refused_by(engines)}",
        related=[value for *_, value in bad[1:]],
    )

"""torchtitan's Float8 converter silently leaves Linear layers whose dims are not multiples of 16 in BF16.

Guideline: torchtitan converts an ``nn.Linear`` to Float8 (and MXFP8) training only when both
of its weight's dims are multiples of 16; any other layer keeps running in BF16 with no error
and no log line. The check is on the whole layer, before tensor parallelism shards it. This
rule runs for FP8 targets (``--dtype fp8``, any ``--fp8-recipe`` but ``nvfp4``: the Float8 and
MXFP8 converters share the filter) that name torchtitan; SL105 reports the same dims as errors
for engines that raise instead, SL327 torchtitan's NVFP4 converter, which raises.

The estimate compares the step with those layers' GEMMs at FP8 against the same GEMMs at BF16
(shapelint's performance model, both on the target GPU); a layer the model has no GEMM of
its own for (the fused q/k/v GEMM when only some of q, k, v stay in BF16) is not counted, so
the number is a lower bound.

Source: torchtitan 0.2.0 ``torchtitan/components/quantization/utils.py:10-30``
(``module_filter_fn``) and ``torchtitan/config/job_config.py:659-663`` (``filter_fqns``).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace

from shapelint.core.model import Dim, Finding, ModelConfig, Target, Value
from shapelint.rules.base import Example, Expect, Rule
from shapelint.rules.engine_shapes import engines_for, is_mla, refused_by

RULE = Rule(
    code="SL314",
    name="fp8-linear-left-bf16",
    severity="warning",
    summary="torchtitan leaves Linear layers with dims not multiples of 16 in BF16 under FP8",
    source="torchtitan 0.2.0 torchtitan/components/quantization/utils.py",
    family="engine",
)

VERIFIED = {
    "torchtitan": "torchtitan/components/quantization/utils.py:10-30; "
    "torchtitan/config/job_config.py:659-663",
}

MULTIPLE = 16

_GPT3_2_7B = (
    '{"hidden_size": 2560, "num_attention_heads": 32, "intermediate_size": 10240,'
    ' "num_hidden_layers": 32, "vocab_size": 50304}\n'
)
EXAMPLES = [
    Example(_GPT3_2_7B, True, target={"dtype": "fp8", "engines": ("torchtitan",)}),
    Example(
        '{"n_embd": 768, "n_head": 12, "n_layer": 12, "n_positions": 1024, "vocab_size": 50257}\n',
        False,
        target={"dtype": "fp8", "engines": ("torchtitan",)},
        note="GPT-2's 50257-token vocab: the output layer stays in BF16",
        expect=(
            Expect(1, "50257", "Float8 training converts only nn.Linear layers whose dims are"),
        ),
    ),
]


def _layers(config: ModelConfig) -> list[tuple[str, int, int, Value, tuple[str, ...]]]:
    """(layer, in, out, value, perf GEMM names) for torchtitan's Llama-style block."""
    out: list[tuple[str, int, int, Value, tuple[str, ...]]] = []
    h, a = config.int(Dim.HIDDEN), config.int(Dim.HEADS)
    d, kv = config.int(Dim.HEAD_DIM), config.int(Dim.KV_HEADS)
    heads, kv_value, hidden = (
        config.get(Dim.HEADS),
        config.get(Dim.KV_HEADS),
        config.get(Dim.HIDDEN),
    )
    if h and a and d and heads is not None and hidden is not None and not is_mla(config):
        out.append(("attention.wq", h, a * d, heads, ()))
        if kv and kv_value is not None:
            out.append(("attention.wk/wv", h, kv * d, kv_value, ()))
        out.append(("attention.wo", a * d, h, heads, ("attn_out",)))
    f, ffn = config.int(Dim.FFN), config.get(Dim.FFN)
    if h and f and ffn is not None:
        out.append(("feed_forward.w1/w3", h, f, ffn, ("mlp_up", "mlp_gate")))
        out.append(("feed_forward.w2", f, h, ffn, ("mlp_down",)))
    return out


def _slowdown(config: ModelConfig, target: Target, gemm_names: set[str]) -> float | None:
    """Percent step time the BF16 layers add over an all-FP8 step (None: no estimate)."""
    if not gemm_names:
        return None
    from shapelint.perf.estimate import step_time

    try:
        fp8 = step_time(config, target)
        bf16 = step_time(config, replace(target, dtype="bf16"))
    except ValueError:
        return None
    if fp8.total_s <= 0 or len(fp8.gemms) != len(bf16.gemms):
        return None
    extra = 0.0
    for low, high in zip(fp8.gemms, bf16.gemms, strict=True):
        if low.gemm.name != high.gemm.name:
            return None
        if low.gemm.name in gemm_names:
            extra += high.total_s - low.total_s
    return 100.0 * extra / fp8.total_s


def check(config: ModelConfig, target: Target) -> Iterator[Finding]:
    """Report the layers torchtitan keeps in BF16, with the step time they add."""
    engines = engines_for(target, VERIFIED)
    if not engines or target.dtype != "fp8" or "torchtitan" not in target.engines:
        return
    if target.fp8_recipe == "nvfp4":
        return  # the NVFP4 converter raises instead (SL327)
    left = [
        (name, i, o, value, gemms)
        for name, i, o, value, gemms in _layers(config)
        if i % MULTIPLE or o % MULTIPLE
    ]
    vocab = config.vocab_value
    h, v = config.int(Dim.HIDDEN), vocab.as_int if vocab is not None else None
    if vocab is not None and h and v and (h % MULTIPLE or v % MULTIPLE):
        left.append(("output", h, v, vocab, ()))
    if not left:
        return
    gemm_names = {g for *_, gemms in left for g in gemms}
    if any(name == "attention.wq" for name, *_ in left) and any(
        name == "attention.wk/wv" for name, *_ in left
    ):
        gemm_names.add("qkv")
    pct = _slowdown(config, target, gemm_names)
    cost = f"; estimated +{pct:.1f}% step time on {target.gpu.name}" if pct else ""
    shown = ", ".join(f"{name} ({o}×{i})" for name, i, o, _, _ in left)
    yield RULE.finding(
        config,
        left[0][3],
        f"Float8 training converts only nn.Linear layers whose dims are multiples of "
        f"{MULTIPLE}: {shown} stay in BF16 without a warning{cost} {refused_by(engines, 'in')}",
        related=[value for _, _, _, value, _ in left[1:]],
    )

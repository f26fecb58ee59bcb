"""TensorRT-LLM refuses an expert-parallel size that does not divide the tensor-parallel size.

Guideline: TensorRT-LLM lays MoE parallelism inside tensor parallelism: ``tp_size`` GPUs are
split as ``moe_tp_size * moe_ep_size * moe_cluster_size``. Given an expert-parallel size ep,
``Mapping`` takes ``moe_tp_size = tp_size // ep`` and raises ``ValueError`` unless the product
is ``tp_size`` again, so ep must divide t (ep larger than t leaves moe_tp_size 0). Under
Megatron or vLLM expert parallelism is its own size; here it is a factor of t. Only configs
with experts are checked; the expert-parallel size is ``--ep`` or the config's. The rule runs
only when TensorRT-LLM is named (``--engine tensorrt-llm``).

Source: TensorRT-LLM commit 05ebebb2 ``tensorrt_llm/mapping.py`` (``Mapping.__init__``: the
``moe_tp_size == -1`` default, then "tp_size must equal to moe_tp_size * moe_ep_size *
moe_cluster_size"), the file as stored at that commit (the engine registry's c6d3bb2a is where
the Python attention module was read for SL301; ``mapping.py`` was not re-read there).
"""

from __future__ import annotations

from collections.abc import Iterator

from shapelint.core.model import Dim, Finding, ModelConfig, Target
from shapelint.rules.base import Example, Expect, Rule
from shapelint.rules.engine_shapes import engines_for, refused_by

RULE = Rule(
    code="SL317",
    name="trtllm-moe-parallel",
    severity="error",
    summary="TensorRT-LLM refuses an expert-parallel size that does not divide tensor parallel",
    source="TensorRT-LLM 05ebebb2: tensorrt_llm/mapping.py Mapping.__init__",
    family="engine",
)

VERIFIED = {"tensorrt-llm": "tensorrt_llm/mapping.py:Mapping.__init__ (05ebebb2)"}

_MIXTRAL = (
    '{"hidden_size": 4096, "num_attention_heads": 32, "num_key_value_heads": 8,'
    ' "intermediate_size": 14336, "num_hidden_layers": 32, "num_local_experts": 8,'
    ' "num_experts_per_tok": 2, "vocab_size": 32000}\n'
)
_TRTLLM = ("tensorrt-llm",)
EXAMPLES = [
    Example(_MIXTRAL, True, target={"tp": 8, "ep": 4, "engines": _TRTLLM}),
    Example(
        _MIXTRAL,
        False,
        target={"tp": 8, "ep": 3, "engines": _TRTLLM},
        note="Mixtral 8x7B at tensor parallel 8 with expert parallel 3",
        expect=(Expect(1, "8", "tp_size must equal to moe_tp_size * moe_ep_size * moe_cluster"),),
    ),
]


def check(config: ModelConfig, target: Target) -> Iterator[Finding]:
    """Report the experts when ep does not divide t under TensorRT-LLM's Mapping."""
    engines = engines_for(target, VERIFIED)
    t, ep = max(target.tp, 1), target.ep
    experts = config.get(Dim.EXPERTS)
    if not engines or ep <= 1 or experts is None or t % ep == 0:
        return
    moe_tp = t // ep
    yield RULE.finding(
        config,
        experts,
        f"tp_size must equal to moe_tp_size * moe_ep_size * moe_cluster_size, but got {t} != "
        f"{moe_tp} * {ep} * 1 (expert parallel {ep} at tensor parallel {t}) "
        f"{refused_by(engines)}",
    )

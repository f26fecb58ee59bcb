"""An engine refuses the attention heads or KV heads at this tensor-parallel size.

Guideline: every engine that splits attention heads over t GPUs checks the split at start-up,
each with its own condition on the KV heads:

- vLLM and SGLang: heads divisible by t; KV heads divisible by t, or t divisible by the KV
  heads (each KV head is then replicated t/kv times, see SL311).
- Megatron-LM: heads a multiple of t; ``num_query_groups`` a multiple or divisor of t.
- TGI: heads and KV heads both divisible by the number of shards (no replication).
- nanotron: heads divisible by tp, and at least tp KV heads.
- TensorRT-LLM (PyTorch backend, when named): heads divisible by tp (a bare assert); the KV
  heads are split ⌈kv / tp⌉ per rank, unchecked. Attention data parallelism (tp 1 for
  attention) is not modelled.

The message quotes the first engine's own wording and lists every engine that refuses. The
heads of a vision or audio tower (``vision_config``) are checked too: vLLM splits them the
same way. For a config written from scratch the fix sets the nearest head count that divides
t and keeps the head dim (and the hidden size with it); a checkpoint's heads are fixed by its
weights, so only a smaller t helps.

Source: vLLM 0.34.0 ``vllm/config/model.py:1577-1584`` (``verify_with_parallel_config``) and
``vllm/model_executor/layers/linear.py:1113-1119`` (``QKVParallelLinear``); SGLang 0.5.23
``sglang/srt/layers/linear.py:1140-1145``; Megatron-LM d98e8a64
``megatron/core/transformer/transformer_config.py:1446-1468``; TGI db931fcf
``server/text_generation_server/models/custom_modeling/flash_llama_modeling.py:167-176``;
nanotron 2411b022 ``src/nanotron/config/config.py:536-544``; TensorRT-LLM c6d3bb2a
``tensorrt_llm/_torch/modules/attention.py:100-117`` (``Attention.__init__``); vLLM issue #11797 (Qwen2-7B,
28 heads, cannot run at TP 8).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from shapelint.core.model import Dim, Finding, Fix, ModelConfig, Target
from shapelint.rules.base import Example, Expect, Rule, consistent_dims, make_fix
from shapelint.rules.engine_shapes import engines_for, refused_by

RULE = Rule(
    code="SL301",
    name="engine-heads-tp",
    severity="error",
    summary="an engine refuses the attention or KV heads at this tensor-parallel size",
    source="vLLM 0.34.0, SGLang 0.5.23, Megatron-LM d98e8a64, TGI db931fcf, nanotron 2411b022",
    family="engine",
)

# Engine → file:line of the check, read at the version `shapelint.hardware.engines` names.
VERIFIED = {
    "vllm": "vllm/config/model.py:1577-1584; vllm/model_executor/layers/linear.py:1113-1119",
    "sglang": "sglang/srt/layers/linear.py:1140-1145",
    "megatron": "megatron/core/transformer/transformer_config.py:1446-1468",
    "tgi": "server/text_generation_server/models/custom_modeling/flash_llama_modeling.py:167-176",
    "nanotron": "src/nanotron/config/config.py:536-544",
    "tensorrt-llm": "tensorrt_llm/_torch/modules/attention.py:100-117 (Attention.__init__)",
}

# Each engine's heads message, in its own words.
HEADS_MESSAGE: dict[str, Callable[[int, int], str]] = {
    "vllm": lambda a, t: (
        f"Total number of attention heads ({a}) must be divisible by tensor parallel size ({t})."
    ),
    "sglang": lambda a, t: f"{a} is not divisible by {t}",
    "megatron": lambda a, t: (
        f"num_attention_heads ({a}) must be a multiple of tensor_model_parallel_size ({t})."
    ),
    "tgi": lambda a, t: (
        f"`num_heads` must be divisible by `num_shards` (got `num_heads`: {a} and `num_shards`: {t}"
    ),
    "nanotron": lambda a, t: f"num_attention_heads ({a}) must be divisible by tp ({t})",
    # A bare assert: its condition is the message.
    "tensorrt-llm": lambda a, t: f"AssertionError: self.num_heads % tp_size == 0 ({a} % {t})",
}


def _replicable(kv: int, t: int) -> bool:
    return kv % t == 0 if kv >= t else t % kv == 0


# Each engine's KV-head condition (True: accepted) and message.
KV_CHECK: dict[str, tuple[Callable[[int, int], bool], Callable[[int, int], str]]] = {
    "vllm": (_replicable, lambda g, t: f"{g} is not divisible by {t}"),
    "sglang": (_replicable, lambda g, t: f"{g} is not divisible by {t}"),
    "megatron": (
        _replicable,
        lambda g, t: (
            f"num_query_groups ({g}) must be a multiple or divisor of "
            f"tensor_model_parallel_size ({t})."
        ),
    ),
    "tgi": (
        lambda g, t: g % t == 0,
        lambda g, t: (
            "`num_key_value_heads` must be divisible by `num_shards` (got "
            f"`num_key_value_heads`: {g} and `num_shards`: {t}"
        ),
    ),
    "nanotron": (
        lambda g, t: g >= t,
        lambda g, t: f"num_key_value_heads ({g}) must be >= tp ({t})",
    ),
    # ⌈kv / tp⌉ KV heads per rank, replicated below tp: no check.
    "tensorrt-llm": (lambda g, t: True, lambda g, t: ""),
}

_QWEN2_7B = (
    '{"architectures": ["Qwen2ForCausalLM"], "hidden_size": 3584, "num_attention_heads": 28,'
    ' "num_key_value_heads": 4, "intermediate_size": 18944, "num_hidden_layers": 28,'
    ' "vocab_size": 152064}\n'
)
EXAMPLES = [
    Example(_QWEN2_7B, True, target={"tp": 4}, note="Qwen2-7B at TP 4"),
    Example(
        _QWEN2_7B,
        False,
        target={"tp": 8, "engines": ("vllm", "sglang")},
        note="Qwen2-7B at TP 8 (vLLM issue #11797)",
        expect=(
            Expect(1, "28", "Total number of attention heads (28) must be divisible by tensor"),
        ),
    ),
    Example(
        '{"hidden_size": 2560, "num_attention_heads": 20, "num_hidden_layers": 32,'
        ' "intermediate_size": 10240, "vocab_size": 50304}\n',
        False,
        target={"tp": 8},
        fixed='{"hidden_size": 3072, "num_attention_heads": 24, "num_hidden_layers": 32,'
        ' "intermediate_size": 10240, "vocab_size": 50304}\n',
        note="a from-scratch config: the nearest head count divisible by 8 keeps head dim 128",
        expect=(
            Expect(1, "20", "Total number of attention heads (20) must be divisible by tensor"),
        ),
    ),
    Example(
        '{"hidden_size": 4096, "num_attention_heads": 32, "num_key_value_heads": 4,'
        ' "intermediate_size": 14336, "num_hidden_layers": 32, "vocab_size": 128256}\n',
        False,
        target={"tp": 8, "engines": ("tgi", "nanotron")},
        note="4 KV heads over 8 shards: vLLM replicates them, TGI and nanotron refuse",
        expect=(Expect(1, "4", "`num_key_value_heads` must be divisible by `num_shards` (got"),),
    ),
]


def _heads_fix(config: ModelConfig, a: int, t: int) -> Fix | None:
    """The head count nearest ``a`` divisible by ``t`` (and a multiple of the KV heads'
    group), keeping the head dim: hidden follows when head dim is hidden / heads."""
    heads = config.get(Dim.HEADS)
    head_dim = config.get(Dim.HEAD_DIM)
    kv = config.get(Dim.KV_HEADS)
    d = config.int(Dim.HEAD_DIM)
    if config.pretrained or heads is None or head_dim is None or d is None:
        return None
    if kv is not None and not kv.derived:
        return None  # GQA: changing heads changes the group size; leave it to the author
    candidates = sorted({(a // t) * t, (a // t + 1) * t} - {0}, key=lambda n: (abs(n - a), -n))
    new = candidates[0]
    changes = [(heads, new)]
    dims: dict[Dim, int] = {Dim.HEADS: new}
    if head_dim.derived:
        hidden = config.get(Dim.HIDDEN)
        if hidden is None or hidden.derived:
            return None
        changes.append((hidden, new * d))
        dims[Dim.HIDDEN] = new * d
    return make_fix(
        config,
        f"set the attention heads to {new} (head dim {d} kept)",
        changes,
        architecture=True,
        dims=tuple(consistent_dims(config, dims).items()),
    )


def check(config: ModelConfig, target: Target) -> Iterator[Finding]:
    """Report heads, then KV heads, that the target's engines refuse at tensor parallel t."""
    t = target.tp
    engines = engines_for(target, VERIFIED)
    if t <= 1 or not engines:
        return
    heads, a = config.get(Dim.HEADS), config.int(Dim.HEADS)
    if heads is not None and a is not None and a % t:
        yield RULE.finding(
            config,
            heads,
            f"{HEADS_MESSAGE[engines[0]](a, t)} {refused_by(engines)}",
            fix=_heads_fix(config, a, t),
        )
        return
    kv, g = config.get(Dim.KV_HEADS), config.int(Dim.KV_HEADS)
    if kv is None or g is None or kv.derived:
        return
    refusing = [e for e in engines if not KV_CHECK[e][0](g, t)]
    if refusing:
        message = KV_CHECK[refusing[0]][1](g, t)
        yield RULE.finding(
            config, kv, f"{message}; {kv.key} = {g} at tensor parallel {t} {refused_by(refusing)}"
        )

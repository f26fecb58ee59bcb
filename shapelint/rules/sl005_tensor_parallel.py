"""A dimension that tensor parallelism splits is not divisible by the tensor-parallel size.

Guideline: Megatron-style tensor parallelism splits attention heads, the FFN width, the
hidden size (row-parallel inputs) and the vocab across t GPUs; each must divide by t (KV
heads fewer than t are replicated instead, which needs t divisible by them). Megatron-LM and
vLLM refuse such a config at start-up.

The vocab is the exception: the engines pad it or split it unevenly themselves, so a vocab
that t does not divide is an error only for an engine of the target that does neither.
``VOCAB_SPLIT`` says, with its source, what each engine of the catalogue does; none of them
refuses today (vLLM's padded vocab can still fail to divide: SL309), so SL005 reports the vocab
only for an engine missing from that table. Alignment of each rank's share is SL101's.

When SL301 reports the same head count for an engine of the target (in the engine's wording,
naming the engines that refuse it), SL005's finding on that value is left out: one error per
value. With SL301 not selected, or no engine of the target checking heads, SL005 reports it.

Source: Shoeybi et al. 2019, "Megatron-LM"; vLLM ``verify_with_parallel_config``
("Total number of attention heads must be divisible by tensor parallel size"); for the vocab,
the engines' sources in ``VOCAB_SPLIT``.
"""

from __future__ import annotations

from collections.abc import Iterator

from shapelint.core.model import Dim, Finding, ModelConfig, Target
from shapelint.hardware.engines import ENGINES, selected, titles
from shapelint.rules.base import Example, Expect, Rule

RULE = Rule(
    code="SL005",
    name="tensor-parallel-divisibility",
    severity="error",
    summary="heads, KV heads, FFN, hidden or vocab not divisible by the tensor-parallel size",
    source="Megatron-LM (Shoeybi et al. 2019); vLLM parallel-config validation",
    family="model",
    # SL301 reports the same head count in the engine's own words, naming who refuses it
    # ("Total number of attention heads (28) must be divisible by tensor parallel size (8)").
    defers_to=("SL301",),
)

_LLAMA_13B = (
    '{"hidden_size": 5120, "num_attention_heads": 40, "intermediate_size": 13824,'
    ' "num_hidden_layers": 40, "vocab_size": 32000}\n'
)
EXAMPLES = [
    Example(_LLAMA_13B, True, target={"tp": 8}),
    Example(
        _LLAMA_13B,
        False,
        target={"tp": 3, "engines": ("flash-attn2",)},
        note="40 heads over 3 GPUs; for an engine that checks heads (vLLM, Megatron-LM …) "
        "SL301 reports the heads instead. The vocab, 32000, is not divisible by 3 either, but "
        "every engine pads it or splits it unevenly",
        expect=(
            Expect(1, "5120", "hidden size (hidden_size = 5120) must be divisible by the"),
            Expect(1, "40", "attention heads (num_attention_heads = 40) must be divisible by the"),
        ),
    ),
]

# What each engine of the catalogue (shapelint.hardware.engines) does with a vocab that the
# tensor-parallel size does not divide, and where that was read. An engine missing here is
# taken to refuse it (the error SL005 reports); a test keeps the table in step with the
# catalogue, so a new engine needs its entry.
VOCAB_SPLIT: dict[str, str] = {
    "vllm": "pads to a multiple of 64 before splitting (vllm==0.34.0 "
    "model_executor/layers/vocab_parallel_embedding.py:39, 291-311); a padded vocab that t "
    "does not divide is SL309",
    "sglang": "pads to a multiple of 64, times t when t does not divide that (sglang==0.5.23 "
    "srt/layers/vocab_parallel_embedding.py:273-275)",
    "tgi": "splits the embedding into ceil(v/t) rows per rank and loads an LM head that t does "
    "not divide whole (server/text_generation_server/layers/tensor_parallel.py:56-64, 213-233 "
    "at db931fcf)",
    "megatron": "pads to a multiple of make_vocab_size_divisible_by × t, default 128 "
    "(megatron/training/vocab_utils.py:58-59 at d98e8a64)",
    "nanotron": "pads to a multiple of make_vocab_size_divisible_by × t "
    "(src/nanotron/trainer.py:988-992, helpers.py:52-56 at 2411b022)",
    "torchtitan": "shards the embedding and output rows as DTensors, which split unevenly "
    "(torchtitan==0.2.0 models/llama3/infra/parallelize.py:167-176)",
    "transformer-engine": "has no embedding or output layer: the framework around it splits "
    "the vocab (transformer_engine/pytorch/module/ at d0067d0d: linear, norm and MLP layers)",
    "deepspeed": "AutoTP splits the LM head near-evenly, the remainder on the last rank "
    "(deepspeed==0.19.8 module_inject/tp_shard.py:119-135)",
    "tensorrt-llm": "gives each rank ceil(v/t) rows and pads the last "
    "(tensorrt_llm/_torch/modules/embedding.py, LMHead and Embedding, read at 06d0733f)",
    "llama.cpp": "splits matrix rows in --tensor-split proportions, the last GPU taking the "
    "rest (ggml/src/ggml-cuda/ggml-cuda.cu get_row_split, read at f6d77a1b)",
    "flash-attn2": "an attention kernel: no vocab",
    "flash-attn3": "an attention kernel: no vocab",
    "flash-attn4": "an attention kernel: no vocab",
    "flashinfer": "an attention kernel: no vocab",
}

_SPLIT = (
    (Dim.HEADS, "attention heads"),
    (Dim.FFN, "FFN width"),
    (Dim.HIDDEN, "hidden size"),
    (Dim.MOE_FFN, "expert FFN width"),
)


def check(config: ModelConfig, target: Target) -> Iterator[Finding]:
    """Report each split dim not divisible by t (t > 1); the vocab only for an engine of the
    target that does not pad it (``VOCAB_SPLIT``)."""
    t = target.tp
    if t <= 1:
        return
    for dim, what in _SPLIT:
        value, n = config.get(dim), config.int(dim)
        if value is not None and n is not None and n % t:
            yield RULE.finding(
                config,
                value,
                f"{what} ({value.key} = {n}) must be divisible by the tensor-parallel size ({t})",
            )
    kv, g = config.get(Dim.KV_HEADS), config.int(Dim.KV_HEADS)
    if kv is not None and g is not None and not kv.derived and (g % t if g >= t else t % g):
        yield RULE.finding(
            config,
            kv,
            f"KV heads ({kv.key} = {g}) must be divisible by the tensor-parallel size ({t}), "
            "or the tensor-parallel size by them",
        )
    vocab = config.vocab_value
    v = vocab.as_int if vocab is not None else None
    if vocab is None or v is None or v <= 0 or v % t == 0:
        return
    unpadded = [n for n in selected(target, [e.name for e in ENGINES]) if n not in VOCAB_SPLIT]
    if unpadded:
        yield RULE.finding(
            config,
            vocab,
            f"vocab ({vocab.key} = {v}) must be divisible by the tensor-parallel size ({t}): "
            f"{titles(unpadded)} {'does' if len(unpadded) == 1 else 'do'} not pad it; pad it "
            "(Megatron pads to a multiple of 128·t)",
        )

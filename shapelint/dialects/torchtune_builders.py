"""torchtune's named model builders: the shape each one builds, for recipes that only name one.

A torchtune recipe YAML usually picks its model by naming a builder with no shape keys::

    model:
      _component_: torchtune.models.llama3_2.lora_llama3_2_1b
      lora_attn_modules: ['q_proj', 'v_proj', 'output_proj']
      lora_rank: 64

The shape is in the builder, ``torchtune/models/<family>/_model_builders.py``, which returns
its family's component builder called with literal keywords (``llama3_2(vocab_size=128_256,
num_layers=16, num_heads=32, num_kv_heads=8, embed_dim=2048, max_seq_len=131072,
intermediate_dim=8192, …)``). `BUILDERS` holds those keywords for the text decoders of
torchtune 0.7.0 (pytorch/torchtune at bd2a0fc7c31430972728494fa01aaeeb0ebf1ba1), keyed by
``<family>.<builder>``; the number after the shape is the builder's ``def`` line in that file.
A LoRA or QLoRA builder (``lora_llama3_2_1b``, ``qlora_llama3_2_1b = partial(lora_…,
quantize_base=True)``) builds the same shape as the plain one and is looked up by it (all 64
such builders of these families do at that commit). An alias is tabled under its own name
(``llama3_3_70b = llama3_1_70b``, llama3_3/_model_builders.py:17).

Left out, so a recipe that names them stays unread: the vision and early-fusion models
(``llama3_2_vision_*``: DeepFusionModel; ``llama4_*``: EarlyFusionModel, MoE), the reward and
classifier builders (``*_reward_7b``, ``llama2_classifier``: their output layer is
``num_classes`` wide, not the vocabulary), SmolLM2 (positional arguments), CLIP, T5, Flux.

Where a builder leaves a keyword out its component builder's default stands:
``intermediate_dim`` of ``llama2_7b`` (``None``) becomes ``scale_hidden_dim_for_mlp(4096)`` =
11008 (llama2/_component_builders.py:85-87, llama2/_model_utils.py:8-23: 4 · int(2·dim/3)
rounded up to 256); ``head_dim`` left out is ``embed_dim // num_heads``. Gemma 2's builders
state ``sliding_window_size=4096``, which its component builder gives the layers with an even
index (gemma2/_component_builders.py:121-139), ⌈layers/2⌉ of them.
"""

from __future__ import annotations

from typing import NamedTuple

TORCHTUNE = "torchtune 0.7.0 (bd2a0fc)"


class Shape(NamedTuple):
    """A builder's keywords: the ones a `ModelConfig` reads, and the builder's ``def`` line."""

    embed_dim: int
    num_heads: int
    num_kv_heads: int
    num_layers: int
    intermediate_dim: int | None
    vocab_size: int
    head_dim: int | None
    max_seq_len: int
    line: int


BUILDERS: dict[str, Shape] = {
    "gemma.gemma_2b": Shape(2048, 8, 1, 18, 16384, 256000, 256, 8192, 24),
    "gemma.gemma_7b": Shape(3072, 16, 16, 28, 24576, 256000, 256, 8192, 129),
    "gemma2.gemma2_27b": Shape(4608, 32, 16, 46, 36864, 256000, 128, 8192, 199),
    "gemma2.gemma2_2b": Shape(2304, 8, 4, 26, 9216, 256000, 256, 8192, 19),
    "gemma2.gemma2_9b": Shape(3584, 16, 8, 42, 14336, 256000, 256, 8192, 109),
    "llama2.llama2_13b": Shape(5120, 40, 40, 40, 13824, 32000, None, 4096, 129),
    "llama2.llama2_70b": Shape(8192, 64, 8, 80, 28672, 32000, None, 4096, 214),
    "llama2.llama2_7b": Shape(4096, 32, 32, 32, None, 32000, None, 4096, 25),
    "llama3.llama3_70b": Shape(8192, 64, 8, 80, 28672, 128256, None, 8192, 47),
    "llama3.llama3_8b": Shape(4096, 32, 8, 32, 14336, 128256, None, 8192, 26),
    "llama3_1.llama3_1_405b": Shape(16384, 128, 8, 126, 53248, 128256, None, 131072, 62),
    "llama3_1.llama3_1_70b": Shape(8192, 64, 8, 80, 28672, 128256, None, 131072, 41),
    "llama3_1.llama3_1_8b": Shape(4096, 32, 8, 32, 14336, 128256, None, 131072, 20),
    "llama3_2.llama3_2_1b": Shape(2048, 32, 8, 16, 8192, 128256, None, 131072, 20),
    "llama3_2.llama3_2_3b": Shape(3072, 24, 8, 28, 8192, 128256, None, 131072, 48),
    # llama3_3_70b = llama3_1_70b: the line is in llama3_1/_model_builders.py
    "llama3_3.llama3_3_70b": Shape(8192, 64, 8, 80, 28672, 128256, None, 131072, 41),
    "mistral.mistral_7b": Shape(4096, 32, 8, 32, 14336, 32000, None, 32768, 29),
    "phi3.phi3_mini": Shape(3072, 32, 32, 32, 8192, 32064, None, 4096, 20),
    "phi4.phi4_14b": Shape(5120, 40, 10, 40, 17920, 100352, None, 16384, 20),
    "qwen2.qwen2_0_5b": Shape(896, 14, 2, 24, 4864, 151936, None, 32768, 45),
    "qwen2.qwen2_1_5b": Shape(1536, 12, 2, 28, 8960, 151936, None, 32768, 72),
    "qwen2.qwen2_7b": Shape(3584, 28, 4, 28, 18944, 152064, None, 32768, 23),
    "qwen2_5.qwen2_5_0_5b": Shape(896, 14, 2, 24, 4864, 151936, None, 32768, 23),
    "qwen2_5.qwen2_5_14b_base": Shape(5120, 40, 8, 48, 13824, 152064, None, 131072, 187),
    "qwen2_5.qwen2_5_14b_instruct": Shape(5120, 40, 8, 48, 13824, 152064, None, 32768, 213),
    "qwen2_5.qwen2_5_1_5b_base": Shape(1536, 12, 2, 28, 8960, 151936, None, 131072, 49),
    "qwen2_5.qwen2_5_1_5b_instruct": Shape(1536, 12, 2, 28, 8960, 151936, None, 32768, 79),
    "qwen2_5.qwen2_5_32b_base": Shape(5120, 40, 8, 64, 27648, 152064, None, 131072, 239),
    "qwen2_5.qwen2_5_32b_instruct": Shape(5120, 40, 8, 64, 27648, 152064, None, 32768, 265),
    "qwen2_5.qwen2_5_3b": Shape(2048, 16, 2, 36, 11008, 151936, None, 32768, 109),
    "qwen2_5.qwen2_5_72b_base": Shape(8192, 64, 8, 80, 29568, 152064, None, 131072, 291),
    "qwen2_5.qwen2_5_72b_instruct": Shape(8192, 64, 8, 80, 29568, 152064, None, 32768, 317),
    "qwen2_5.qwen2_5_7b_base": Shape(3584, 28, 4, 28, 18944, 152064, None, 131072, 135),
    "qwen2_5.qwen2_5_7b_instruct": Shape(3584, 28, 4, 28, 18944, 152064, None, 32768, 161),
    "qwen3.qwen3_0_6b_base": Shape(1024, 16, 8, 28, 3072, 151936, 128, 32768, 23),
    "qwen3.qwen3_0_6b_instruct": Shape(1024, 16, 8, 28, 3072, 151936, 128, 40960, 52),
    "qwen3.qwen3_14b_base": Shape(5120, 40, 8, 40, 17408, 151936, 128, 32768, 253),
    "qwen3.qwen3_14b_instruct": Shape(5120, 40, 8, 40, 17408, 151936, 128, 40960, 281),
    "qwen3.qwen3_1_7b_base": Shape(2048, 16, 8, 28, 6144, 151936, 128, 32768, 81),
    "qwen3.qwen3_1_7b_instruct": Shape(2048, 16, 8, 28, 6144, 151936, 128, 40960, 110),
    "qwen3.qwen3_32b": Shape(5120, 64, 8, 64, 25600, 151936, 128, 40960, 309),
    "qwen3.qwen3_4b_base": Shape(2560, 32, 8, 36, 9728, 151936, 128, 32768, 139),
    "qwen3.qwen3_4b_instruct": Shape(2560, 32, 8, 36, 9728, 151936, 128, 40960, 168),
    "qwen3.qwen3_8b_base": Shape(4096, 32, 8, 36, 12288, 151936, 128, 32768, 197),
    "qwen3.qwen3_8b_instruct": Shape(4096, 32, 8, 36, 12288, 151936, 128, 40960, 225),
}
# Gemma 2: the window its builders state (every gemma2_* builder: sliding_window_size=4096).
GEMMA2_WINDOW = 4096
ADAPTER_PREFIXES = ("qlora_", "lora_")


def lookup(component: str) -> tuple[str, Shape] | None:
    """The builder a ``_component_`` path names (``torchtune.models.<family>.<builder>``,
    LoRA/QLoRA variants by their plain builder) and its shape; None when not tabled."""
    parts = component.split(".")
    if len(parts) < 4 or parts[:2] != ["torchtune", "models"]:
        return None
    family, name = parts[2], parts[-1]
    for prefix in ADAPTER_PREFIXES:
        if name.startswith(prefix):
            name = name[len(prefix) :]
            break
    key = f"{family}.{name}"
    shape = BUILDERS.get(key)
    return (key, shape) if shape is not None else None


def llama2_ffn(embed_dim: int, multiple_of: int = 256) -> int:
    """torchtune's ``scale_hidden_dim_for_mlp`` (llama2/_model_utils.py:8-23): 4 · int(2·dim/3)
    rounded up to ``multiple_of``; the FFN of a Llama 2 builder that states none."""
    hidden = 4 * int(2 * embed_dim / 3)
    return multiple_of * ((hidden + multiple_of - 1) // multiple_of)

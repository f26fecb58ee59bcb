"""The engines a config implies by itself: its framework's, or its quantization format's.

A Megatron or NeMo training config runs on Megatron, a Megatron-LM one also on Transformer
Engine unless its ``transformer_impl`` is "local"; an HF checkpoint with
``quantization_config`` is served by the engines that load that format.

Used when neither a flag nor the settings name the engines (`shapelint.engine.target`).
"""

from __future__ import annotations

from shapelint.core.model import Dim, ModelConfig

# Quantization formats (``quantization_config.quant_method``) and the engines that serve them.
QUANT_ENGINES: dict[str, tuple[str, ...]] = {
    "awq": ("vllm", "sglang", "tgi"),
    "gptq": ("vllm", "sglang", "tgi"),
    "fp8": ("vllm", "sglang"),
}

# Dialects whose configs run on one engine.
DIALECT_ENGINES: dict[str, tuple[str, ...]] = {
    "megatron-lm": ("megatron",),
    "nemo": ("megatron",),
    "nanotron": ("nanotron",),
    "torchtitan": ("torchtitan",),
}


def default_engines(config: ModelConfig) -> tuple[str, ...] | None:
    """The engines ``config`` itself implies, or None when it does not say."""
    if config.dialect == "megatron-lm" and _runs_on_te(config):
        return (*DIALECT_ENGINES[config.dialect], "transformer-engine")
    if config.dialect in DIALECT_ENGINES:
        return DIALECT_ENGINES[config.dialect]
    method = config.get(Dim.QUANT_METHOD)
    if method is not None and isinstance(method.value, str):
        return QUANT_ENGINES.get(method.value.lower())
    return None


def _runs_on_te(config: ModelConfig) -> bool:
    """Megatron-LM builds its layers from Transformer Engine unless ``transformer_impl`` says
    otherwise (``TransformerConfig.transformer_impl`` defaults to "transformer_engine",
    megatron/core/transformer/transformer_config.py:1314-1316 at d98e8a64; the command-line
    flags take that default, megatron/training/arguments.py:2373)."""
    impl = config.get(Dim.TRANSFORMER_IMPL)
    return impl is None or str(impl.value).lower() == "transformer_engine"
